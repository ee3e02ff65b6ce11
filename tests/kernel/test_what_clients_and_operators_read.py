"""The exact texts a client reads in a refusal (message and each detail) and the line and
metric an operator reads: a create's 409 and 422, a feed query's 400 for each part, and an
idempotent replay (a line at INFO with the status, ``IdempotentReplays``) or the 422 of a
key used for another request (neither)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from reservations.events.feeds import FeedQuery, org_feed
from reservations.kernel.bodies import RawBody
from reservations.kernel.caller import Caller
from reservations.kernel.errors import FieldProblem, IdempotencyKeyReused, InvalidRequest
from reservations.kernel.idempotency.models import IdempotentRequest, Outcome, StoredResponse
from reservations.kernel.idempotency.replay import REPLAYED, replay
from reservations.kernel.pipeline import _lost_race
from reservations.kernel.writes import WriteConflict
from reservations.lifecycle.create import CREATE
from reservations.lifecycle.errors import UnitsNotReservable
from reservations.nodes.errors import UnitsUnavailable
from reservations.nodes.models.partition import ReservationStatus
from tests.support.event_fakes import FakeEvents
from tests.support.fakes import FakeClock, FakeTable, ports
from tests.support.use_cases import UNITS, unit
from tests.support.writes import create_reservation, reaffirm

pytestmark = pytest.mark.disable_socket

OWNER = Caller("key-owner", "org-acme", frozenset({"reservation.write"}), key_hash="h-owner")
READER = Caller("key-lab", "org-lab", frozenset({"events.read"}), key_hash="h-lab")
FREE = "0000:0b:00.0"
AWAY = "0000:ff:00.0"


def lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str, Any]]:
    return [
        (r.levelname, r.getMessage(), getattr(r, "status", None))
        for r in caplog.records
        if r.name == "reservations"
    ]


# --- an idempotent replay -----------------------------------------------------------------

REQUEST = IdempotentRequest("scope-1", "hash-1")
FIRST = Outcome(201, '{"id":"res-1"}', (("Location", "/v1/nodes/node-a/reservations/res-1"),))
STORED = StoredResponse("hash-1", FIRST, datetime(2026, 12, 1, tzinfo=UTC))


def test_a_replay_is_the_first_answer_marked_said_at_info_and_counted(emitted, said):
    assert replay(REQUEST, STORED) == replace(FIRST, headers=(*FIRST.headers, REPLAYED))
    assert REPLAYED == ("Idempotent-Replayed", "true")
    assert lines(said) == [("INFO", "idempotent replay", 201)]
    assert emitted == {
        "IdempotentReplays": {"Unit": "Count", "Value": [1.0], "StorageResolution": 60}
    }


def test_a_key_used_for_another_request_is_422_and_no_replay(emitted, said):
    with pytest.raises(IdempotencyKeyReused) as refused:
        replay(IdempotentRequest("scope-1", "hash-2"), STORED)
    assert refused.value.message == "Idempotency-Key was already used with a different request"
    assert lines(said) == []
    assert emitted == {}


# --- a create's refusals ------------------------------------------------------------------


def _refused(store: FakeTable, clock: FakeClock, unit_ids: list[str]) -> Any:
    store.nodes["node-a"].units[FREE] = unit(FREE)
    body = RawBody(json.dumps({"unitIds": unit_ids, "allowedOrgIds": ["org-lab"]}))
    with pytest.raises((UnitsUnavailable, UnitsNotReservable)) as refused:
        create_reservation(OWNER, "node-a", body, None, ports(store, clock))
    return refused.value


def test_a_create_refusal_names_each_unit_in_its_message_and_details(store, clock, said):
    """res-1 holds 07 and 08 (04-06 released); ff is on no node."""
    held = _refused(store, clock, [FREE, UNITS[4], UNITS[3]])
    assert isinstance(held, UnitsUnavailable)
    assert held.message == f"units unavailable: {UNITS[4]}, {UNITS[3]}"
    assert [d.field for d in held.details] == ["unitIds[1]", "unitIds[2]"]
    assert all(d.problem.startswith(f"{u}: held by reservation res-1") for d, u in
               zip(held.details, (UNITS[4], UNITS[3]), strict=True))  # fmt: skip
    away = _refused(store, clock, [FREE, AWAY])
    assert isinstance(away, UnitsNotReservable)
    assert away.message == f"units not reservable: {AWAY}"
    assert away.details == [FieldProblem("unitIds[1]", f"{AWAY}: unit is not on this node")]
    # Said at INFO with its code; without an Idempotency-Key nothing is kept.
    refusals = [r for r in said.records if r.getMessage() == "create refused"]
    assert [(r.levelname, r.code, r.kept) for r in refusals] == [
        ("INFO", "units_unavailable", False),
        ("INFO", "units_not_reservable", False),
    ]


# --- a feed query's 400s ------------------------------------------------------------------

LIMIT = "must be an integer from 1 to 100"
TIME = "must be an RFC 3339 date and time with an offset, e.g. 2027-01-01T00:00:00Z"


@pytest.mark.parametrize(
    ("query", "message", "detail"),
    [
        ({"limit": "0"}, f"limit {LIMIT}", FieldProblem("limit", LIMIT)),
        (
            {"types": " reservation.created , reservation.made,node.gone"},
            "types must be a comma-separated list of event types",
            FieldProblem("types", "unknown event type 'reservation.made'"),
        ),
        (
            {"types": "x" * 100},
            "types must be a comma-separated list of event types",
            FieldProblem("types", f"unknown event type {'x' * 60!r}"),
        ),
        ({"after": "yesterday"}, f"after {TIME}", FieldProblem("after", TIME)),
    ],
)
def test_a_bad_feed_query_part_is_a_400_saying_what_is_wrong(query, message, detail):
    with pytest.raises(InvalidRequest) as refused:
        org_feed(READER, FeedQuery(**query), FakeEvents(), b"k" * 32, STORED.expires_at)
    assert refused.value.message == message
    assert refused.value.details == [detail]


# --- a lost race --------------------------------------------------------------------------


def _reasons(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str, Any]]:
    return [
        (r.levelname, r.getMessage(), getattr(r, "reasons", None))
        for r in caplog.records
        if r.name == "reservations"
    ]


def test_a_lost_race_is_said_at_info_with_why_and_retried(said):
    conflict = WriteConflict("node node-a changed since it was read")
    assert _lost_race(CREATE, REQUEST, conflict, STORED.expires_at) is None
    assert _reasons(said) == [
        ("INFO", "create lost a race; retrying", "node node-a changed since it was read")
    ]


def test_a_race_lost_to_the_keys_own_first_answer_replays_it_and_is_no_lost_race(said):
    conflict = WriteConflict("kept", stored=STORED)
    replayed = _lost_race(CREATE, REQUEST, conflict, STORED.expires_at - timedelta(hours=1))
    assert replayed is not None
    assert replayed.body == FIRST.body
    assert [message for _, message, _ in _reasons(said)] == ["idempotent replay"]


# --- a re-affirm's 422 --------------------------------------------------------------------


def test_a_reaffirm_of_units_gone_names_each_in_its_message(store, clock):
    """res-rev, under review, reserves two units no longer on the node."""
    gone = ("0000:f1:00.0", "0000:f2:00.0")
    review = store.nodes["node-a"].reservations["res-1"]
    store.nodes["node-a"].reservations["res-rev"] = replace(
        review, id="res-rev", status=ReservationStatus.NEEDS_REVIEW, reserved_unit_ids=gone,
        released_unit_ids=(),
    )  # fmt: skip
    operator = Caller("key-op", "org-op", frozenset({"node.write"}), True, key_hash="h-op")
    with pytest.raises(UnitsNotReservable) as refused:
        reaffirm(operator, "node-a", "res-rev", RawBody(None), None, ports(store, clock))
    assert refused.value.message == (
        f"reservation res-rev holds units that are not reservable: {gone[0]}, {gone[1]}"
    )
    assert [d.field for d in refused.value.details] == ["reservedUnitIds[0]", "reservedUnitIds[1]"]
