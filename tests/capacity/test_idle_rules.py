"""The lending policy's rule of idle units (pure): when a unit is idle from, which units a
pass lends and in what order, keepUnlent, the next moment, and the doubling wait after
take-backs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from reservations.capacity.rules.idle import (
    Idle,
    UnitHistory,
    idle_from,
    lending_at,
    lent,
    taken_back,
)
from reservations.nodes import LendingPolicy

pytestmark = pytest.mark.disable_socket

T0 = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
U = [f"0000:0{i}:00.0" for i in range(4, 9)]
POLICY = LendingPolicy(auto=True, idle_seconds=900, relend_after_seconds=300)


def minutes(n: float) -> timedelta:
    return timedelta(minutes=n)


def idle(**changes) -> Idle:
    base = {
        "units": {u: UnitHistory(joined_at=T0) for u in U[:3]},
        "released": frozenset(),
        "busy": frozenset(),
        "active_since": T0,
        "auto_since": T0,
        "policy": POLICY,
    }
    return Idle(**(base | changes))


def test_a_unit_is_idle_from_the_latest_of_its_moments():
    units = {
        U[0]: UnitHistory(joined_at=T0 + minutes(1)),
        U[1]: UnitHistory(joined_at=T0, freed_at=T0 + minutes(7)),
        U[2]: UnitHistory(joined_at=T0, freed_at=T0 + minutes(2), relend_at=T0 + minutes(9)),
    }
    read = idle(units=units, active_since=T0 + minutes(3), auto_since=T0 + minutes(5))
    assert idle_from(read, U[0]) == T0 + minutes(5)  # auto turned on last
    assert idle_from(read, U[1]) == T0 + minutes(7)  # freed last
    assert idle_from(read, U[2]) == T0 + minutes(9)  # its wait after a take-back


def test_released_and_busy_units_are_not_idle():
    read = idle(released=frozenset({U[0]}), busy=frozenset({U[1]}))
    assert (idle_from(read, U[0]), idle_from(read, U[1])) == (None, None)
    assert idle_from(read, U[2]) == T0


def test_a_unit_is_lent_once_idle_idle_seconds_never_before():
    assert lending_at(idle(), T0 + minutes(15) - timedelta(milliseconds=1)).unit_ids == ()
    assert lending_at(idle(), T0 + minutes(15)).unit_ids == tuple(U[:3])


def test_due_units_are_lent_in_id_order_and_the_next_moment_is_the_earliest_not_due():
    units = {
        U[2]: UnitHistory(joined_at=T0),
        U[0]: UnitHistory(joined_at=T0),
        U[1]: UnitHistory(joined_at=T0, freed_at=T0 + minutes(10)),
    }
    decided = lending_at(idle(units=units), T0 + minutes(16))
    assert decided.unit_ids == (U[0], U[2])
    assert decided.next_at == T0 + minutes(25)


def test_keep_unlent_stops_the_lending_counting_busy_units_as_unreleased():
    policy = LendingPolicy(auto=True, idle_seconds=900, keep_unlent=2)
    units = {u: UnitHistory(joined_at=T0) for u in U[:4]}
    read = idle(units=units, policy=policy, busy=frozenset({U[3]}), released=frozenset())
    decided = lending_at(read, T0 + minutes(20))
    assert decided.unit_ids == (U[0], U[1])  # 04 and 05 lent; 06 and the busy 07 stay
    assert decided.kept == (U[2],)


def test_keep_unlent_counts_units_already_released():
    policy = LendingPolicy(auto=True, idle_seconds=900, keep_unlent=1)
    read = idle(policy=policy, released=frozenset({U[0]}))
    assert lending_at(read, T0 + minutes(20)).unit_ids == (U[1],)


def test_auto_off_lends_nothing():
    read = idle(policy=LendingPolicy(auto=False))
    assert lending_at(read, T0 + minutes(60)) == lending_at(read, T0)
    assert lending_at(read, T0 + minutes(60)).unit_ids == ()


def test_the_wait_after_take_backs_doubles_within_an_hour_of_lending_up_to_an_hour():
    unit = UnitHistory(joined_at=T0)
    waits = []
    at = T0
    for _ in range(6):
        unit = lent({U[0]: unit}, [U[0]], at)[U[0]]
        at += minutes(2)  # taken back two minutes after each lending
        unit = taken_back(unit, POLICY, at)
        assert unit.relend_at is not None
        waits.append((unit.relend_at - at).total_seconds())
        at = unit.relend_at
    assert waits == [300, 600, 1200, 2400, 3600, 3600]


def test_a_unit_lent_for_an_hour_starts_again_from_relend_after_seconds():
    unit = UnitHistory(joined_at=T0, lent_at=T0, take_backs=4)
    again = taken_back(unit, POLICY, T0 + minutes(60))
    assert (again.take_backs, again.relend_at) == (1, T0 + minutes(65))
    soon = taken_back(unit, POLICY, T0 + minutes(59))
    assert (soon.take_backs, soon.relend_at) == (5, T0 + minutes(59) + minutes(60))
