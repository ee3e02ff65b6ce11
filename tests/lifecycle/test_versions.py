"""Reservation versions over the fakes: the tag every answer carrying one reservation gives
(its ``etag`` and ``ETag``), when it changes (every write to the reservation, its effective
status by the clock or a node update, and only then), and If-Match on cancel, re-affirm,
release and reclaim: the order of checks (404, replay, 412, 409, 422), nothing done on a 412,
never kept by a key, a retry whose first try committed replayed, a dry run ignoring it."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from reservations import endpoints
from reservations.capacity.reclaim import RECLAIM
from reservations.capacity.release import RELEASE
from reservations.kernel.bodies import RawBody
from reservations.kernel.caller import Caller
from reservations.kernel.errors import (
    IdempotencyKeyReused,
    InvalidRequest,
    NotFound,
    PreconditionFailed,
)
from reservations.kernel.http.resolver import error_headers
from reservations.kernel.idempotency.replay import REPLAYED
from reservations.kernel.pipeline import run_write
from reservations.lifecycle.cancel import CANCEL
from reservations.lifecycle.errors import ReservationNotActive, UnitsNotInReservation
from reservations.lifecycle.history_mover import MoveOutcome, move_expired
from reservations.lifecycle.read import ListQuery, get_reservation, list_reservations
from reservations.lifecycle.reaffirm import REAFFIRM
from reservations.lifecycle.update import UPDATE
from reservations.lifecycle.views import reservation_etag, version_tag
from reservations.nodes import ReservationStatus
from reservations.terminations.models import TerminationReport
from reservations.terminations.reports import apply_report
from tests.support.fakes import FakeTable, ports
from tests.support.use_cases import AUDIENCE, BROKER, NOW, OPERATOR, OWNER, STRANGER, UNITS
from tests.support.writes import end_workload, place_workload

pytestmark = pytest.mark.disable_socket

ALL = frozenset(
    {"reservation.read", "reservation.capacity", "reservation.write", "node.write",
     "workload.place"}
)  # fmt: skip
OWNER_ALL, OPERATOR_ALL, BROKER_ALL, STRANGER_ALL = (
    replace(caller, permissions=ALL) for caller in (OWNER, OPERATOR, BROKER, STRANGER)
)
READER = replace(AUDIENCE, permissions=frozenset({"reservation.read"}))

# Each write that honours If-Match: its spec, its route, who calls it, a body that changes
# the reservation, and how res-1 must be for it to act (re-affirm: under review).
WRITES: dict[str, tuple[Any, Any, Caller, dict[str, Any], dict[str, Any]]] = {
    "release": (RELEASE, endpoints.RELEASE, BROKER_ALL, {"unitIds": [UNITS[3]]}, {}),
    "reclaim": (RECLAIM, endpoints.RECLAIM, BROKER_ALL, {"unitIds": [UNITS[0]]}, {}),
    "cancel": (CANCEL, endpoints.CANCEL, OWNER_ALL, {}, {}),
    "update": (UPDATE, endpoints.UPDATE_RESERVATION, OWNER_ALL, {"contractRef": "C-9"}, {}),
    "reaffirm": (
        REAFFIRM, endpoints.REAFFIRM, OPERATOR_ALL, {},
        {"status": ReservationStatus.NEEDS_REVIEW},
    ),
}  # fmt: skip


def call(store, clock, name, *, if_match=None, key=None, res="res-1", caller=None, **body):
    spec, route, who, document, _ = WRITES[name]
    raw = RawBody(json.dumps({**document, **body}))
    at = route.at(nodeId="node-a", reservationId=res)
    return run_write(spec, at, caller or who, raw, key, ports(store, clock), if_match)


def prepared(store: FakeTable, name: str) -> None:
    _with_reservation(store, **WRITES[name][4])


def _with_reservation(store: FakeTable, **changes: object) -> None:
    partition = store.nodes["node-a"]
    partition.reservations["res-1"] = replace(partition.reservations["res-1"], **changes)


def current(store: FakeTable, clock) -> str:
    """res-1's tag as a reader is shown it now (wherever it is: live or in the history)."""
    return get_reservation(OWNER_ALL, "node-a", "res-1", store, clock()).etag


def stored_version(store: FakeTable) -> int:
    partition = store.nodes["node-a"]
    return (partition.reservations.get("res-1") or partition.history["res-1"]).version


def etag_of(outcome) -> str:
    return dict(outcome.headers)["ETag"]


# --- the tag every answer carries ------------------------------------------------------------


@pytest.mark.parametrize("name", list(WRITES))
def test_an_answer_carries_the_tag_a_reader_sees_after_it_in_its_body_and_quoted(
    store, clock, name
):
    prepared(store, name)
    before = current(store, clock)
    outcome = call(store, clock, name)
    assert outcome.status == 200
    body = json.loads(outcome.body)
    assert etag_of(outcome) == f'"{body["etag"]}"'
    assert body["etag"] == current(store, clock) != before  # the write changed it


def test_a_tag_is_the_stored_version_and_the_effective_status_and_nothing_else(store, clock):
    reservation = store.nodes["node-a"].reservations["res-1"]
    node = store.nodes["node-a"].node
    tag = reservation_etag(reservation, node, NOW)
    assert tag == version_tag(reservation.version, ReservationStatus.ACTIVE)
    # The same pair, whatever else differs, is the same tag; another pair another tag.
    other = replace(reservation, id="res-9", reason="x", contract_ref=None)
    assert reservation_etag(other, node, NOW) == tag
    assert version_tag(reservation.version + 1, ReservationStatus.ACTIVE) != tag
    assert version_tag(reservation.version, ReservationStatus.EXPIRED) != tag
    assert len({version_tag(v, s) for v in range(1, 50) for s in ReservationStatus}) == 49 * 5


def test_the_list_items_carry_the_same_tag_as_the_reservation_read_alone(store, clock):
    page = list_reservations(OWNER_ALL, "node-a", ListQuery(), store, b"k" * 32, NOW)
    assert [item.etag for item in page.items] == [current(store, clock)]


# --- when it changes: its effective status, by the clock or a node update --------------------


def test_the_clock_changes_the_tag_when_it_turns_pending_active_and_active_expired(store, clock):
    _with_reservation(store, status=ReservationStatus.PENDING, starts_at=NOW + timedelta(hours=1))
    pending = current(store, clock)
    clock.now = NOW + timedelta(minutes=59)
    assert current(store, clock) == pending  # nothing changed yet
    clock.now = NOW + timedelta(hours=1)
    active = current(store, clock)
    assert active != pending
    clock.now = NOW + timedelta(days=30)
    expired = current(store, clock)
    assert len({pending, active, expired}) == 3


def test_a_node_update_that_puts_it_under_review_changes_the_tag_without_writing_it(store, clock):
    before = current(store, clock)
    version = stored_version(store)
    partition = store.nodes["node-a"]
    # What a node update stores: a unit of res-1 changed at a generation after its own.
    partition.node = replace(partition.node, topology_gen=2, unit_changed_at={UNITS[0]: 2})
    assert get_reservation(OWNER_ALL, "node-a", "res-1", store, NOW).status == "needs-review"
    assert current(store, clock) != before
    assert stored_version(store) == version


# --- and only then: writes that leave the reservation as it is -------------------------------


def test_a_release_of_units_already_released_keeps_the_tag(store, clock):
    before = current(store, clock)
    outcome = call(store, clock, "release", unitIds=[UNITS[0]], if_match=f'"{before}"')
    assert (outcome.status, etag_of(outcome)) == (200, f'"{before}"')
    assert current(store, clock) == before


def test_a_reclaim_of_units_not_released_keeps_the_tag(store, clock):
    before = current(store, clock)
    outcome = call(store, clock, "reclaim", unitIds=[UNITS[3]], if_match=f'"{before}"')
    assert (outcome.status, etag_of(outcome)) == (200, f'"{before}"')
    assert current(store, clock) == before
    assert json.loads(outcome.body)["skipped"] == ["vm-res"]  # it did run


def test_a_reclaim_that_terminates_on_released_units_changes_the_tag(store, clock):
    before = current(store, clock)
    outcome = call(store, clock, "reclaim", unitIds=[UNITS[1]])
    assert json.loads(outcome.body)["terminated"] == ["vm-span"]
    assert etag_of(outcome) == f'"{current(store, clock)}"' != f'"{before}"'


def test_a_placement_and_a_workload_end_keep_the_tag(store, clock):
    before = current(store, clock)
    partition = store.nodes["node-a"]
    partition.units[UNITS[0]] = replace(partition.units[UNITS[0]], claimed_by=None)
    del partition.workloads["vm-spot"]
    place = RawBody(json.dumps({"id": "vm-new", "kind": "vm", "tier": "spot",
                                "orgId": "org-spot", "unitIds": [UNITS[0]]}))  # fmt: skip
    assert place_workload(OPERATOR_ALL, "node-a", place, None, ports(store, clock)).status == 201
    assert current(store, clock) == before
    assert end_workload(OPERATOR_ALL, "node-a", "vm-new", None, ports(store, clock)).status == 204
    assert current(store, clock) == before


def test_a_termination_report_keeps_the_tag(store, clock):
    before = current(store, clock)
    report = TerminationReport(termination_id="t-old", node_id="node-a", workload_id="vm-term",
                               outcome="terminated", reported_at=NOW)  # fmt: skip
    assert apply_report(report, NOW, store, store) == "closed"
    assert current(store, clock) == before


def test_the_move_to_the_nodes_history_keeps_the_tag_of_an_expired_reservation(store, clock):
    _with_reservation(store, ends_at=NOW - timedelta(hours=1))
    expired = current(store, clock)
    assert move_expired(ports(store, clock), time_left=lambda: 60.0)[MoveOutcome.MOVED] == 1
    assert "res-1" in store.nodes["node-a"].history
    assert current(store, clock) == expired


# --- If-Match: the version acted on ------------------------------------------------------------


@pytest.mark.parametrize("name", list(WRITES))
@pytest.mark.parametrize("header", ['"{tag}"', "*", ' "{tag}" '])
def test_the_current_tag_or_star_acts(store, clock, name, header):
    prepared(store, name)
    version = stored_version(store)
    assert call(store, clock, name, if_match=header.format(tag=current(store, clock))).status == 200
    assert stored_version(store) == version + 1


@pytest.mark.parametrize("name", list(WRITES))
@pytest.mark.parametrize(
    "header", ['"stale"', 'W/"{tag}"', '"other", W/"{tag}"'], ids=["stale", "weak", "weak-in-list"]
)
def test_another_tag_is_412_with_the_current_etag_and_nothing_done(store, clock, name, header):
    prepared(store, name)
    tag = current(store, clock)
    writes, events = store.writes, list(store.events)
    with pytest.raises(PreconditionFailed) as refused:
        call(store, clock, name, if_match=header.format(tag=tag))
    assert error_headers(refused.value) == {"ETag": f'"{tag}"'}
    assert (store.writes, store.events, current(store, clock)) == (writes, events, tag)


@pytest.mark.parametrize("name", list(WRITES))
def test_one_of_several_tags_matching_acts(store, clock, name):
    prepared(store, name)
    header = f'"old1", "{current(store, clock)}", W/"old2"'
    assert call(store, clock, name, if_match=header).status == 200


@pytest.mark.parametrize("name", list(WRITES))
@pytest.mark.parametrize("header", ["", "abc", '"a" "b"', '*, "a"'])
def test_a_malformed_if_match_is_a_400_naming_it_before_anything_is_read_of_the_state(
    store, clock, name, header
):
    prepared(store, name)
    _with_reservation(store, ends_at=NOW - timedelta(days=1))  # would be a 409 otherwise
    with pytest.raises(InvalidRequest) as refused:
        call(store, clock, name, if_match=header)
    assert [d.field for d in refused.value.details] == ["If-Match"]
    assert store.writes == 0


@pytest.mark.parametrize("name", list(WRITES))
def test_an_unknown_or_invisible_reservation_is_the_404_whatever_the_if_match(store, clock, name):
    prepared(store, name)
    for header in ('"stale"', "*"):
        with pytest.raises(NotFound) as refused:
            call(store, clock, name, if_match=header, res="res-x")
        assert error_headers(refused.value) is None  # no ETag on a 404
    if name in ("release", "reclaim", "cancel"):  # the operator's re-affirm sees everything
        with pytest.raises(NotFound) as refused:
            call(store, clock, name, if_match='"stale"', caller=STRANGER_ALL)
        assert error_headers(refused.value) is None


@pytest.mark.parametrize("name", ["release", "reclaim", "cancel"])
def test_the_412_comes_before_a_409_and_the_409_after_a_matching_tag(store, clock, name):
    _with_reservation(store, status=ReservationStatus.CANCELLED)
    with pytest.raises(PreconditionFailed):
        call(store, clock, name, if_match='"stale"')
    with pytest.raises(ReservationNotActive):
        call(store, clock, name, if_match=f'"{current(store, clock)}"')


def test_the_412_comes_before_a_reaffirms_409(store, clock):
    with pytest.raises(PreconditionFailed):
        call(store, clock, "reaffirm", if_match='"stale"')


@pytest.mark.parametrize("name", ["release", "reclaim"])
def test_the_412_comes_before_a_422(store, clock, name):
    with pytest.raises(PreconditionFailed):
        call(store, clock, name, unitIds=["0000:99:00.0"], if_match='"stale"')
    with pytest.raises(UnitsNotInReservation):
        call(store, clock, name, unitIds=["0000:99:00.0"], if_match="*")


@pytest.mark.parametrize("name", list(WRITES))
def test_a_412_is_not_kept_by_the_key_which_then_acts(store, clock, name):
    prepared(store, name)
    with pytest.raises(PreconditionFailed):
        call(store, clock, name, if_match='"stale"', key="k-1")
    assert store.answers == {}
    outcome = call(store, clock, name, if_match=f'"{current(store, clock)}"', key="k-1")
    assert outcome.status == 200
    assert REPLAYED not in outcome.headers


@pytest.mark.parametrize("name", list(WRITES))
def test_a_retry_whose_first_try_committed_gets_its_replay_never_a_412(store, clock, name):
    prepared(store, name)
    header = f'"{current(store, clock)}"'
    first = call(store, clock, name, if_match=header, key="k-1")
    writes = store.writes
    again = call(store, clock, name, if_match=header, key="k-1")  # the tag moved: its own
    assert (again.status, again.body) == (first.status, first.body)
    assert etag_of(again) == etag_of(first)  # the tag as of that answer
    assert REPLAYED in again.headers
    assert store.writes == writes


@pytest.mark.parametrize("name", list(WRITES))
def test_another_request_under_a_committed_key_is_still_the_422_never_a_412(store, clock, name):
    prepared(store, name)
    header = f'"{current(store, clock)}"'
    call(store, clock, name, if_match=header, key="k-1")
    with pytest.raises(IdempotencyKeyReused):
        call(store, clock, name, if_match=header, key="k-1", reason="another")


@pytest.mark.parametrize("name", ["release", "reclaim"])
@pytest.mark.parametrize("header", ['"stale"', 'W/"x"', "not a tag"])
def test_a_dry_run_ignores_if_match_and_names_the_version_it_ran_against(
    store, clock, name, header
):
    tag = current(store, clock)
    outcome = call(store, clock, name, dryRun=True, if_match=header)
    assert outcome.status == 200
    assert (etag_of(outcome), json.loads(outcome.body)["etag"]) == (f'"{tag}"', tag)
    assert store.writes == 0
    # ... so that a real run may be conditioned on what the dry run saw.
    assert call(store, clock, name, if_match=etag_of(outcome)).status == 200


def test_a_reader_cannot_use_if_match_to_learn_of_what_it_may_not_change(store, clock):
    # The audience may read res-1, and so knows its tag, but may not release: the 404.
    tag = get_reservation(READER, "node-a", "res-1", store, NOW).etag
    with pytest.raises(NotFound):
        call(store, clock, "release", if_match=f'"{tag}"', caller=replace(READER, permissions=ALL))
