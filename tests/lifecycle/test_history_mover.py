"""The history mover over the fakes: an expired reservation leaves the node's partition for
its history once; one written since the listing is left for the next pass; a pass with no
time left defers the rest."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from reservations.kernel.observability import metrics
from reservations.lifecycle.history_mover import MOVE_RESERVE_SECONDS, MoveOutcome, move_expired
from reservations.nodes.models.partition import Reservation
from tests.support.fakes import FakeTable, ports
from tests.support.use_cases import NOW
from tests.support.use_cases import reservation as listed_reservation

pytestmark = pytest.mark.disable_socket


def _expire(store: FakeTable) -> Reservation:
    """res-1 of node-a, its term over an hour ago."""
    partition = store.nodes["node-a"]
    ended = replace(partition.reservations["res-1"], ends_at=NOW - timedelta(hours=1))
    partition.reservations["res-1"] = ended
    return ended


def test_an_expired_reservation_moves_once(store, clock):
    ended = _expire(store)
    counts = move_expired(ports(store, clock), time_left=lambda: 60.0)
    assert counts[MoveOutcome.MOVED] == 1
    partition = store.nodes["node-a"]
    assert "res-1" not in partition.reservations
    assert partition.history["res-1"].retained_until == ended.ends_at + timedelta(days=400)  # type: ignore[operator]
    again = move_expired(ports(store, clock), time_left=lambda: 60.0)
    assert again[MoveOutcome.MOVED] == again[MoveOutcome.LEFT] == 0


def test_a_live_reservation_stays(store, clock):
    assert move_expired(ports(store, clock), time_left=lambda: 60.0)[MoveOutcome.MOVED] == 0
    assert "res-1" in store.nodes["node-a"].reservations


class Stale(FakeTable):
    """The index lists the reservation at the version before a write the move meets."""

    def due_moves(self, now: Any) -> Any:
        listed = list(super().due_moves(now))
        for reservation in listed:
            partition = self.nodes[reservation.node_id]
            partition.reservations[reservation.id] = replace(
                reservation, version=reservation.version + 1
            )
        return iter(listed)


def test_a_reservation_written_since_it_was_listed_is_left_for_the_next_pass(store, clock):
    _expire(store)
    counts = move_expired(ports(Stale.sharing(store), clock), time_left=lambda: 60.0)
    assert (counts[MoveOutcome.MOVED], counts[MoveOutcome.LEFT]) == (0, 1)
    assert "res-1" in store.nodes["node-a"].reservations
    assert move_expired(ports(store, clock), time_left=lambda: 60.0)[MoveOutcome.MOVED] == 1


def test_a_pass_without_time_left_defers(store, clock):
    _expire(store)
    counts = move_expired(ports(store, clock), time_left=lambda: 1.0)
    assert (counts[MoveOutcome.MOVED], counts[MoveOutcome.DEFERRED]) == (0, 1)
    assert "res-1" in store.nodes["node-a"].reservations


# --- what an operator reads --------------------------------------------------------------


def _lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str, Any]]:
    return [
        (r.levelname, r.getMessage(), getattr(r, "deferred", None))
        for r in caplog.records
        if r.name == "reservations"
    ]


def test_a_pass_counts_what_it_moved_and_warns_of_what_it_deferred(store, clock, emitted, said):
    ended = _expire(store)
    store.nodes["node-a"].reservations["res-2"] = replace(ended, id="res-2")
    move_expired(ports(store, clock), time_left=lambda: 1.0)
    count = {"Unit": "Count", "Value": [0.0], "StorageResolution": 60}
    assert emitted == {"ReservationsMovedToHistory": count}
    assert _lines(said) == [("WARNING", "history moves deferred", 2)]
    metrics.clear_metrics()
    said.clear()
    move_expired(ports(store, clock), time_left=lambda: 60.0)
    assert emitted == {"ReservationsMovedToHistory": {**count, "Value": [2.0]}}
    assert _lines(said) == []


class Lagging(FakeTable):
    """The index still lists a reservation extended since (not due any more) before the
    expired one; and records which nodes' list access is pruned."""

    pruned: list[str]

    def due_moves(self, now: Any) -> Any:
        yield listed_reservation("res-x", ends_at=None)
        yield from super().due_moves(now)

    def prune_named(self, node_id: str, now: Any) -> int:
        self.pruned.append(node_id)
        return 0


def test_a_listed_reservation_not_due_is_skipped_and_the_rest_still_move(store, clock):
    ended = _expire(store)
    store.nodes["node-a"].reservations["res-2"] = replace(ended, id="res-2")
    lagging = Lagging.sharing(store)
    lagging.pruned = []
    counts = move_expired(ports(lagging, clock), time_left=lambda: 60.0)
    assert counts[MoveOutcome.MOVED] == 2
    assert lagging.pruned == ["node-a"]  # once, for the node it moved reservations of


def test_exactly_the_reserve_left_is_enough_to_move_and_prune_but_nothing_moved_prunes_nothing(
    store, clock
):
    _expire(store)
    lagging = Lagging.sharing(store)
    lagging.pruned = []
    counts = move_expired(ports(lagging, clock), time_left=lambda: MOVE_RESERVE_SECONDS)
    assert counts[MoveOutcome.MOVED] == 1
    assert lagging.pruned == ["node-a"]
    lagging.pruned = []
    assert move_expired(ports(lagging, clock), time_left=lambda: 60.0)[MoveOutcome.MOVED] == 0
    assert lagging.pruned == []
