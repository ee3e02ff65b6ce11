"""The clock's pass over the fakes: each moment written once, at its moment, by the clock;
an activation a review stands in the way of passes without an event; the end is carried by
the move into the history; a write between read and commit leaves the moment to the next
pass; many due at one moment are all worked through, each at its moment; a pass reads what
is due and nothing else."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from reservations.kernel.bodies import RawBody
from reservations.kernel.times import format_time
from reservations.lifecycle.clock import ClockOutcome, run_clock
from reservations.lifecycle.rules.clock import CLOCK_SHARDS
from reservations.nodes import Node, ReservationStatus
from tests.support.fakes import FakeTable, ports
from tests.support.use_cases import NOW, OPERATOR, OWNER, QUEUE, reservation
from tests.support.writes import reaffirm, update_reservation

pytestmark = pytest.mark.disable_socket

M = timedelta(minutes=1)
OWNER_W = replace(OWNER, permissions=frozenset({"reservation.read", "reservation.write"}))


def _arm(store: FakeTable, **overrides: Any) -> None:
    """res-1 of node-a pending, starting in a minute, ending in 90 (warned 60 before)."""
    fields: dict[str, Any] = {
        "status": ReservationStatus.PENDING,
        "starts_at": NOW + M,
        "ends_at": NOW + 90 * M,
        "armed_at": NOW,
        "warning_minutes": 60,
        **overrides,
    }
    partition = store.nodes["node-a"]
    partition.reservations["res-1"] = reservation(**fields)


def _pass(store: FakeTable, clock: Any, at: Any) -> dict[ClockOutcome, int]:
    clock.now = at
    return run_clock(ports(store, clock), time_left=lambda: 60.0)


def _clock_events(store: FakeTable) -> list[tuple[str, Any, Any]]:
    return [
        (s.event.type, s.event.time, s.event.data["moment"])
        for s in store.events
        if s.event.type.startswith("reservation.") and "moment" in s.event.data
    ]


def test_each_moment_is_written_once_at_its_moment_by_the_clock(store, clock):
    _arm(store)
    assert _pass(store, clock, NOW)[ClockOutcome.FIRED] == 0
    for at in (NOW + 2 * M, NOW + 3 * M, NOW + 31 * M, NOW + 32 * M, NOW + 91 * M, NOW + 92 * M):
        _pass(store, clock, at)
    assert _clock_events(store) == [
        ("reservation.activated", NOW + M, "startsAt"),
        ("reservation.expiring", NOW + 30 * M, "endsAt"),
        ("reservation.expired", NOW + 90 * M, "endsAt"),
    ]
    first = store.events[-3]
    assert first.event.envelope(show_key_id=True)["data"]["actor"] == {"system": "clock"}
    assert first.audience_org_ids == {"org-lab", "org-broker"}
    assert first.owner_org_id == "org-acme"
    assert "res-1" in store.nodes["node-a"].history
    assert "res-1" not in store.nodes["node-a"].reservations


def test_the_clock_never_bumps_the_version(store, clock):
    _arm(store)
    version = store.nodes["node-a"].reservations["res-1"].version
    _pass(store, clock, NOW + 31 * M)
    after = store.nodes["node-a"].reservations["res-1"]
    assert after.version == version
    assert dict(after.clock_fired) == {"activated": NOW + M, "expiring": NOW + 30 * M}


def test_a_pass_after_an_outage_writes_every_moment_due_each_at_its_moment(store, clock):
    _arm(store)
    _pass(store, clock, NOW + 200 * M)
    assert [(t, at) for t, at, _ in _clock_events(store)] == [
        ("reservation.activated", NOW + M),
        ("reservation.expiring", NOW + 30 * M),
        ("reservation.expired", NOW + 90 * M),
    ]


def test_an_activation_under_review_passes_without_an_event(store, clock):
    partition = store.nodes["node-a"]
    partition.node = replace(partition.node, topology_gen=2, unit_changed_at={"0000:04:00.0": 2})
    _arm(store, topology_gen=1)
    assert _pass(store, clock, NOW + 2 * M)[ClockOutcome.FIRED] == 1
    assert _clock_events(store) == []
    assert _pass(store, clock, NOW + 3 * M)[ClockOutcome.FIRED] == 0


def test_one_created_active_gets_no_activation_and_a_cancelled_one_nothing(store, clock):
    _arm(store, status=ReservationStatus.ACTIVE, starts_at=NOW - M)
    _pass(store, clock, NOW + 2 * M)
    assert _clock_events(store) == []
    store.nodes["node-a"].reservations.pop("res-1")  # a cancel moves it to the history
    _pass(store, clock, NOW + 200 * M)
    assert _clock_events(store) == []


class WrittenBetween(FakeTable):
    """A write lands on the reservation between the pass's read and its commit."""

    def load_reservation(self, node_id: str, reservation_id: str) -> Any:
        node, read = super().load_reservation(node_id, reservation_id)
        partition = self.nodes[node_id]
        partition.reservations[reservation_id] = replace(read, version=read.version + 1)
        return node, read


def test_a_write_between_read_and_commit_leaves_the_moment_to_the_next_pass(store, clock):
    _arm(store)
    clock.now = NOW + 2 * M
    counts = run_clock(ports(WrittenBetween.sharing(store), clock), time_left=lambda: 60.0)
    assert (counts[ClockOutcome.FIRED], counts[ClockOutcome.LEFT]) == (0, 1)
    assert _clock_events(store) == []
    _pass(store, clock, NOW + 3 * M)
    assert [t for t, _, _ in _clock_events(store)] == ["reservation.activated"]


def test_many_ending_at_one_moment_are_all_worked_through_each_at_its_moment(store, clock):
    partition = store.nodes["node-a"]
    partition.reservations.clear()
    for n in range(250):
        r = reservation(f"res-{n:03d}", starts_at=NOW - M, ends_at=NOW + 61 * M, armed_at=NOW - M)
        partition.reservations[r.id] = replace(r, warning_minutes=60)
    counts = _pass(store, clock, NOW + 2 * M)
    assert counts[ClockOutcome.FIRED] == 250
    times = {at for _, at, _ in _clock_events(store)}
    assert times == {NOW + M}
    assert len({s.id for s in store.events}) == len(store.events) == 250


def test_a_pass_reads_what_is_due_and_defers_without_time(store, clock):
    _arm(store)
    store.reads = 0
    store.clock_queries = 0
    _pass(store, clock, NOW)
    assert (store.clock_queries, store.reads) == (CLOCK_SHARDS, 0)
    store.clock_queries = 0
    _pass(store, clock, NOW + 2 * M)
    assert store.reads == 1  # the one due reservation and its node, one request
    assert store.clock_queries == CLOCK_SHARDS + 1  # its shard read again: nothing more due
    clock.now = NOW + 31 * M
    deferred = run_clock(ports(store, clock), time_left=lambda: 1.0)
    assert deferred[ClockOutcome.FIRED] == 0


def test_a_node_added_with_no_reservations_costs_the_pass_nothing(store, clock):
    store.add(Node("node-b", "org-acme", queue_url=QUEUE), [], [], [])
    _pass(store, clock, NOW)
    assert store.reads == 0


def _patch(store: FakeTable, clock: Any, at: Any, body: dict[str, Any]) -> int:
    clock.now = at
    outcome = update_reservation(
        OWNER_W, "node-a", "res-1", RawBody(json.dumps(body)), None, ports(store, clock)
    )
    return outcome.status


def test_a_patch_moving_the_end_rearms_the_warning_and_the_end_a_passed_warning_at_its_commit(
    store, clock
):
    _arm(store)
    _pass(store, clock, NOW + 2 * M)
    assert _patch(store, clock, NOW + 10 * M, {"endsAt": format_time(NOW + 40 * M)}) == 200
    moved = store.nodes["node-a"].reservations["res-1"]
    assert (moved.armed_at, moved.warning_minutes) == (NOW + 10 * M, 60)
    for at in (NOW + 11 * M, NOW + 31 * M, NOW + 41 * M, NOW + 91 * M):
        _pass(store, clock, at)
    assert _clock_events(store) == [
        ("reservation.activated", NOW + M, "startsAt"),
        # max(endsAt - 60 min, startsAt) had passed: the PATCH's commit is its moment
        ("reservation.expiring", NOW + 10 * M, "endsAt"),
        ("reservation.expired", NOW + 40 * M, "endsAt"),
    ]


def test_a_patch_moving_the_start_rearms_the_activation_at_the_new_start_only(store, clock):
    _arm(store)
    assert _patch(store, clock, NOW, {"startsAt": format_time(NOW + 5 * M)}) == 200
    for at in (NOW + 2 * M, NOW + 6 * M, NOW + 7 * M):
        _pass(store, clock, at)
    assert _clock_events(store) == [("reservation.activated", NOW + 5 * M, "startsAt")]


def test_a_patch_changing_no_moment_keeps_the_arming(store, clock):
    _arm(store, armed_at=NOW - M)
    assert _patch(store, clock, NOW, {"reason": "moved desks"}) == 200
    kept = store.nodes["node-a"].reservations["res-1"]
    assert kept.armed_at == NOW - M


class FiredBetween(FakeTable):
    """The clock fires the activation after the PATCH read the node, before it commits."""

    fired = False
    clock: Any = None

    def load_node(self, node_id: str) -> Any:
        snapshot = super().load_node(node_id)
        if not FiredBetween.fired:
            FiredBetween.fired = True
            run_clock(ports(self, FiredBetween.clock), time_left=lambda: 60.0)
        return snapshot


def test_a_moment_fired_between_a_patchs_read_and_commit_makes_it_retry_and_fires_once(
    store, clock
):
    _arm(store)
    racing = FiredBetween.sharing(store)
    clock.now = NOW + 2 * M
    FiredBetween.fired, FiredBetween.clock = False, clock
    body = RawBody(json.dumps({"endsAt": format_time(NOW + 100 * M)}))
    outcome = update_reservation(OWNER_W, "node-a", "res-1", body, None, ports(racing, clock))
    assert outcome.status == 200
    assert len(store.updated) == 1
    after = store.nodes["node-a"].reservations["res-1"]
    assert dict(after.clock_fired) == {"activated": NOW + M}  # the PATCH kept the record
    for at in (NOW + 3 * M, NOW + 4 * M):
        _pass(store, clock, at)
    assert [t for t, _, _ in _clock_events(store)] == ["reservation.activated"]


NODE_OP = replace(OPERATOR, permissions=frozenset({"node.write"}))


def _affirm(store: FakeTable, clock: Any, at: Any) -> int:
    clock.now = at
    outcome = reaffirm(NODE_OP, "node-a", "res-1", RawBody(None), None, ports(store, clock))
    return outcome.status


def test_a_reaffirm_into_active_after_the_start_writes_the_activation_at_its_commit(store, clock):
    _arm(store, status=ReservationStatus.NEEDS_REVIEW)
    _pass(store, clock, NOW + 2 * M)  # under review at its start: no activation
    assert _clock_events(store) == []
    assert _affirm(store, clock, NOW + 5 * M) == 200
    for at in (NOW + 6 * M, NOW + 31 * M, NOW + 91 * M):
        _pass(store, clock, at)
    assert _clock_events(store) == [
        ("reservation.activated", NOW + 5 * M, "startsAt"),
        ("reservation.expiring", NOW + 30 * M, "endsAt"),
        ("reservation.expired", NOW + 90 * M, "endsAt"),
    ]
    activated = next(s for s in store.events if s.event.type == "reservation.activated")
    assert activated.event.envelope(show_key_id=True)["data"]["actor"] == {"system": "clock"}


def test_a_pending_reservation_under_review_at_its_start_is_activated_by_the_reaffirm_once(
    store, clock
):
    """The pass had passed the activation (a review stood in its way), as the stored
    record says; the re-affirm writes it, and no later pass writes it again."""
    _arm(store, clock_fired=(("activationPassed", NOW + M),))
    assert _affirm_under_review(store, clock, NOW + 5 * M) == 200
    for at in (NOW + 6 * M, NOW + 7 * M):
        _pass(store, clock, at)
    assert _clock_events(store) == [("reservation.activated", NOW + 5 * M, "startsAt")]


def _affirm_under_review(store: FakeTable, clock: Any, at: Any) -> int:
    partition = store.nodes["node-a"]
    held = partition.reservations["res-1"]
    partition.reservations["res-1"] = replace(held, status=ReservationStatus.NEEDS_REVIEW)
    return _affirm(store, clock, at)


@pytest.mark.parametrize(
    "fields",
    [
        # created active: its create said so
        {"starts_at": NOW - M, "armed_at": NOW},
        # activated by the clock before the review
        {"clock_fired": (("activated", NOW + M),)},
    ],
)
def test_a_reaffirm_of_one_created_active_or_already_activated_writes_no_activation(
    store, clock, fields
):
    _arm(store, status=ReservationStatus.NEEDS_REVIEW, **fields)
    assert _affirm(store, clock, NOW + 5 * M) == 200
    _pass(store, clock, NOW + 6 * M)
    assert [t for t, _, _ in _clock_events(store)] == []


def test_a_reaffirm_before_the_start_leaves_the_activation_to_the_clock(store, clock):
    _arm(store, status=ReservationStatus.NEEDS_REVIEW)
    assert _affirm(store, clock, NOW) == 200
    _pass(store, clock, NOW + 2 * M)
    assert _clock_events(store) == [("reservation.activated", NOW + M, "startsAt")]
