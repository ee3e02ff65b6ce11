"""Idempotency-Key over the fakes: replays, what is kept, reuse, expiry, dry runs, twins."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest

from reservations.kernel.bodies import RawBody
from reservations.kernel.errors import Conflict, IdempotencyKeyReused, InvalidRequest, NotFound
from reservations.kernel.idempotency.rules import KEPT_FOR
from reservations.kernel.retries import MAX_ATTEMPTS
from reservations.lifecycle.errors import ReservationNotActive
from reservations.nodes.models.partition import ReservationStatus
from tests.capacity.test_reclaim import Conflicting
from tests.support.fakes import ports
from tests.support.use_cases import BROKER, QUEUE, STRANGER, UNITS
from tests.support.writes import reclaim

pytestmark = pytest.mark.disable_socket

ONE = {"unitIds": [UNITS[0]]}


def post(store, queue, clock, body=ONE, key="key-1", caller=BROKER, res="res-1"):
    raw = RawBody(body if isinstance(body, str) else json.dumps(body))
    return reclaim(caller, "node-a", res, raw, key, ports(store, clock, queue))


def test_a_repeat_is_the_first_answer_byte_for_byte_and_nothing_happens_twice(store, queue, clock):
    first = post(store, queue, clock)
    clock.now += timedelta(minutes=5)
    again = post(store, queue, clock, {"reason": None, "unitIds": [UNITS[0].upper()]})
    assert (again.status, again.body) == (first.status, first.body)
    assert len(store.audit) == 1
    assert len(queue.sent(QUEUE)) == 1


def test_the_record_is_written_with_the_effect(store, queue, clock):
    post(store, queue, clock)
    assert store.writes == 1  # one write: the reclaim carries the record
    [record] = store.answers.values()
    assert record.expires_at == clock.now + KEPT_FOR


def test_the_same_key_on_another_request_is_422_and_changes_nothing(store, queue, clock):
    post(store, queue, clock)
    for other in ({"unitIds": [UNITS[1]]}, {"unitIds": [UNITS[0]], "reason": "x"}):
        with pytest.raises(IdempotencyKeyReused):
            post(store, queue, clock, other)
    assert len(store.audit) == 1


def test_keys_are_scoped_to_the_api_key(store, queue, clock):
    post(store, queue, clock)
    owner = replace(BROKER, key_hash="hash-other-key")
    assert post(store, queue, clock, {"unitIds": [UNITS[1]]}, caller=owner).status == 200


@pytest.mark.parametrize(
    ("status", "expected"),
    [(ReservationStatus.NEEDS_REVIEW, "needs-review"), (ReservationStatus.CANCELLED, "cancelled")],
)
def test_a_409_not_active_is_kept_and_replayed_after_the_reservation_turns_active(
    store, queue, clock, status, expected
):
    reservations = store.nodes["node-a"].reservations
    active = reservations["res-1"]
    reservations["res-1"] = replace(active, status=status)
    with pytest.raises(ReservationNotActive, match=expected) as first:
        post(store, queue, clock)
    reservations["res-1"] = active
    replayed = post(store, queue, clock)
    assert replayed.status == 409
    assert json.loads(replayed.body)["error"] == first.value.message
    assert store.audit == []


def test_a_422_outside_is_kept_and_replayed(store, queue, clock):
    partition = store.nodes["node-a"]
    partition.reservations["res-1"] = replace(
        partition.reservations["res-1"], reserved_unit_ids=(UNITS[1],)
    )
    with pytest.raises(Exception, match="not in reservation"):
        post(store, queue, clock)
    assert post(store, queue, clock).status == 422
    assert len(store.answers) == 1


def test_400_and_404_are_not_kept_and_the_key_then_acts(store, queue, clock):
    with pytest.raises(InvalidRequest):
        post(store, queue, clock, "{not json")
    with pytest.raises(NotFound):
        post(store, queue, clock, caller=STRANGER)
    with pytest.raises(NotFound):
        post(store, queue, clock, res="res-x")
    assert store.answers == {}
    assert post(store, queue, clock).status == 200


def test_a_409_conflict_is_not_kept_and_the_key_then_acts(store, clock, queue):
    conflicting = Conflicting(clock)
    conflicting.nodes = store.nodes
    conflicting.losses = MAX_ATTEMPTS
    with pytest.raises(Conflict):
        post(conflicting, queue, clock)
    assert conflicting.answers == {}
    assert post(conflicting, queue, clock).status == 200


def test_a_record_is_absent_once_expired(store, queue, clock):
    post(store, queue, clock)
    clock.now += KEPT_FOR
    # The same key on another request now acts instead of answering 422.
    assert post(store, queue, clock, {"unitIds": [UNITS[1]]}).status == 200
    assert len(store.audit) == 2


def test_a_dry_run_neither_checks_nor_keeps_the_key(store, queue, clock):
    dry = {"unitIds": [UNITS[0]], "dryRun": True}
    assert post(store, queue, clock, dry, key="\x00 not printable").status == 200
    assert post(store, queue, clock, dry).status == 200
    assert store.answers == {}
    assert post(store, queue, clock).status == 200  # the key was not taken by the dry runs


@pytest.mark.parametrize("key", ["", "x" * 256, "caf\u00e9", "tab\there"])
def test_a_malformed_key_is_400_naming_the_header(store, queue, clock, key):
    with pytest.raises(InvalidRequest) as refused:
        post(store, queue, clock, key=key)
    assert refused.value.details[0].field == "Idempotency-Key"
    assert store.writes == 0


def test_a_concurrent_twin_gets_the_same_answer_and_there_is_one_effect(store, queue, clock):
    twin = []
    store.between_read_and_write.append(lambda: twin.append(post(store, queue, clock)))
    first = post(store, queue, clock)
    assert (first.status, first.body) == (twin[0].status, twin[0].body)
    assert len(store.audit) == 1
    assert len(queue.sent(QUEUE)) == 1


def test_a_crash_after_the_commit_is_answered_from_the_record_on_retry(store, queue, clock):
    class Crash(Exception):
        pass

    def crash(*_args):
        raise Crash

    with pytest.raises(Crash):
        reclaim(
            BROKER,
            "node-a",
            "res-1",
            RawBody(json.dumps(ONE)),
            "key-1",
            ports(store, clock, queue, send_terminations=crash),
        )
    retried = post(store, queue, clock)
    assert retried.status == 200
    assert json.loads(retried.body)["terminated"] == ["vm-spot"]
    assert len(store.audit) == 1
    assert queue.messages == {}  # the sweeper delivers it
