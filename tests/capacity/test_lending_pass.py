"""The lending pass over the fakes: a reservation's idle units lent within one pass of their
moment, never before, once; by the policy's rules (id order, keepUnlent, the wait after a
take-back); only while active; each unit's idle time from the latest of its moments; what a
pass reads (the due reservations, never the fleet); a write between the read and the commit
leaves the reservation to the next pass."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest

from reservations.capacity.lending import LendingOutcome, lend_due, run_lending
from reservations.capacity.rules.idle import after_policy, after_take_back
from reservations.nodes import LendingPolicy, Node, ReservationStatus, UnitLending
from tests.support.fakes import FakeClock, FakeTable, ports
from tests.support.use_cases import NOW, QUEUE, UNITS, reservation, unit, workload

pytestmark = pytest.mark.disable_socket

S = timedelta(seconds=1)
M = timedelta(minutes=1)
PERIOD = 10 * S  # the local clock period
POLICY = LendingPolicy(auto=True, idle_seconds=60, relend_after_seconds=120)
U4, U5, U6, U7, U8 = UNITS


def _lending_store(
    clock: FakeClock, claims: dict[str, str] | None = None, **fields: Any
) -> FakeTable:
    """node-a with its five units (``claims``: unit → workload) and res-1 reserving them all,
    none released, its policy turned on at NOW (its next pass: NOW)."""
    store = FakeTable(clock)
    claims = claims or {}
    by_workload: dict[str, list[str]] = {}
    for unit_id, workload_id in claims.items():
        by_workload.setdefault(workload_id, []).append(unit_id)
    res = after_policy(reservation(released=(), **fields), POLICY, NOW)
    store.add(
        Node("node-a", "org-acme", queue_url=QUEUE),
        [unit(u, f"vm:{claims[u]}" if u in claims else None) for u in UNITS],
        [res],
        [workload(w, tuple(us)) for w, us in by_workload.items()],
    )
    return store


def _pass(store: FakeTable, clock: FakeClock, at: datetime) -> dict[LendingOutcome, int]:
    clock.now = at
    return run_lending(ports(store, clock), time_left=lambda: 60.0)


def _res(store: FakeTable, reservation_id: str = "res-1") -> Any:
    return store.nodes["node-a"].reservations[reservation_id]


def _released_events(store: FakeTable) -> list[tuple[Any, list[str], dict[str, Any]]]:
    return [
        (s.event.time, s.event.data["unitIds"], s.event.envelope(show_key_id=True)["data"]["actor"])
        for s in store.events
        if s.event.type == "reservation.released"
    ]


def _every_period(store: FakeTable, clock: FakeClock, start: datetime, end: datetime) -> None:
    at = start
    while at <= end:
        _pass(store, clock, at)
        at += PERIOD


def test_idle_units_are_lent_within_one_period_of_idle_seconds_never_before_and_once():
    clock = FakeClock(NOW)
    store = _lending_store(clock)
    _every_period(store, clock, NOW, NOW + 5 * M)
    events = _released_events(store)
    assert events == [(NOW + 60 * S, list(UNITS), {"system": "lending"})]
    assert sorted(_res(store).released_unit_ids) == UNITS
    assert _res(store).lend_at is None  # nothing idle waits: out of the index


def test_a_pass_between_periods_lends_at_the_first_pass_after_the_moment():
    clock = FakeClock(NOW)
    store = _lending_store(clock)
    _pass(store, clock, NOW + 59 * S)
    assert _released_events(store) == []
    _pass(store, clock, NOW + 61 * S)
    assert [e[0] for e in _released_events(store)] == [NOW + 61 * S]


def test_the_lending_bumps_the_version_and_records_each_unit_lent():
    clock = FakeClock(NOW)
    store = _lending_store(clock)
    before = _res(store).version
    _pass(store, clock, NOW)
    assert _res(store).version == before  # the first pass only moves its place on
    assert _res(store).lend_at == NOW + 60 * S
    _pass(store, clock, NOW + 60 * S)
    after = _res(store)
    assert after.version == before + 1
    assert after.updated_at == NOW + 60 * S
    assert dict(after.lending_units) == {u: UnitLending(lent_at=NOW + 60 * S) for u in UNITS}


def test_a_busy_unit_is_lent_idle_seconds_after_it_was_freed_never_before():
    clock = FakeClock(NOW)
    store = _lending_store(clock, claims={U4: "vm-lab"})
    _pass(store, clock, NOW + 60 * S)  # 05-08 lent; 04 busy: looked at again in a minute
    assert _released_events(store)[0][1] == UNITS[1:]
    assert _res(store).lend_at == NOW + 120 * S
    freed = NOW + 90 * S  # the lab's VM ends
    partition = store.nodes["node-a"]
    partition.units[U4] = replace(partition.units[U4], claimed_by=None, freed_at=freed)
    partition.workloads.pop("vm-lab")
    _every_period(store, clock, NOW + 70 * S, NOW + 5 * M)
    assert [e[:2] for e in _released_events(store)[1:]] == [(NOW + 150 * S, [U4])]


def test_keep_unlent_keeps_that_many_units_unreleased_counting_busy_ones():
    clock = FakeClock(NOW)
    store = _lending_store(clock, claims={U8: "vm-lab"})
    res = _res(store)
    policy = replace(POLICY, keep_unlent=2)
    store.nodes["node-a"].reservations["res-1"] = replace(res, lending=policy)
    _every_period(store, clock, NOW, NOW + 5 * M)
    assert [e[1] for e in _released_events(store)] == [[U4, U5, U6]]  # 07 and the busy 08 stay


def test_units_taken_back_wait_relend_after_seconds_then_idle_seconds():
    clock = FakeClock(NOW)
    store = _lending_store(clock)
    _pass(store, clock, NOW + 60 * S)
    taken = NOW + 2 * M
    res = _res(store)
    back = after_take_back(replace(res, released_unit_ids=tuple(UNITS[2:])), [U4, U5], taken)
    store.nodes["node-a"].reservations["res-1"] = replace(back, version=res.version + 1)
    _every_period(store, clock, taken, taken + 10 * M)
    # the wait (120 s), then idle 60 s: lent again three minutes after the take-back
    assert [e[:2] for e in _released_events(store)[1:]] == [(taken + 3 * M, [U4, U5])]
    assert dict(_res(store).lending_units)[U4].take_backs == 1


def test_only_an_active_reservation_lends():
    clock = FakeClock(NOW)
    pending = _lending_store(clock, status=ReservationStatus.PENDING, starts_at=NOW + 5 * M)
    _pass(pending, clock, NOW)
    assert _res(pending).lend_at == NOW + 5 * M  # looked at again at its start
    _every_period(pending, clock, NOW + 10 * S, NOW + 7 * M)
    # idle from its start, so lent a minute after it
    assert [e[0] for e in _released_events(pending)] == [NOW + 6 * M]


def test_a_reservation_under_review_lends_nothing_and_leaves_the_index():
    clock = FakeClock(NOW)
    store = _lending_store(clock, status=ReservationStatus.NEEDS_REVIEW)
    _every_period(store, clock, NOW, NOW + 3 * M)
    assert _released_events(store) == []
    assert _res(store).lend_at is None


def test_auto_off_or_no_policy_lends_nothing():
    clock = FakeClock(NOW)
    store = _lending_store(clock)
    res = _res(store)
    store.nodes["node-a"].reservations["res-1"] = after_policy(
        res, replace(POLICY, auto=False), NOW
    )
    _every_period(store, clock, NOW, NOW + 3 * M)
    assert _released_events(store) == []
    assert _res(store).lend_at is None


def test_a_claim_between_the_read_and_the_commit_leaves_the_unit_to_the_next_pass():
    clock = FakeClock(NOW + 60 * S)
    store = _lending_store(clock)

    def claim() -> None:
        partition = store.nodes["node-a"]
        read = partition.units[U4]
        partition.units[U4] = replace(read, claimed_by="vm:vm-new", version=read.version + 1)

    store.between_read_and_write.append(claim)
    outcome = lend_due(ports(store, clock), "node-a", "res-1", NOW + 60 * S)
    assert outcome is LendingOutcome.LEFT
    assert _released_events(store) == []
    _pass(store, clock, NOW + 70 * S)  # read again: 04 is claimed now, the rest lent
    assert [e[1] for e in _released_events(store)] == [UNITS[1:]]


def test_two_passes_at_once_lend_once():
    clock = FakeClock(NOW + 60 * S)
    store = _lending_store(clock)
    outcomes = []
    store.between_read_and_write.append(
        lambda: outcomes.append(lend_due(ports(store, clock), "node-a", "res-1", NOW + 60 * S))
    )
    outcomes.append(lend_due(ports(store, clock), "node-a", "res-1", NOW + 60 * S))
    assert outcomes == [LendingOutcome.LENT, LendingOutcome.LEFT]
    assert len(_released_events(store)) == 1


def test_a_pass_reads_the_due_reservations_never_the_rest_of_the_fleet():
    """One Query of each index partition, and for each due reservation one of its node,
    with 0 or 100,000 idle units waiting elsewhere (3,125 reservations of 32 units)."""
    many = [f"0000:{n:02x}:00.0" for n in range(32)]

    def reads(waiting: int) -> tuple[int, int]:
        clock = FakeClock(NOW)
        store = _lending_store(clock)
        for n in range(waiting):
            res = reservation(f"res-w{n}", reserved=tuple(many), released=(), node_id=f"node-w{n}")
            store.add(
                Node(f"node-w{n}", "org-acme", queue_url=QUEUE),
                [unit(u) for u in many],
                [replace(after_policy(res, POLICY, NOW), lend_at=NOW + 10 * M)],
                [],
            )
        store.reads = store.lending_queries = 0
        _pass(store, clock, NOW + 60 * S)
        return store.lending_queries, store.reads

    assert reads(0) == reads(3_125) == (16, 1)  # each shard once; res-1's node, to lend it
