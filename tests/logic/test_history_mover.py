"""The history mover over the fakes: an expired reservation leaves the node's partition for
its history once; one written since the listing is left for the next pass; a pass with no
time left defers the rest."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from reservations.logic.history_mover import MoveOutcome, move_expired
from reservations.models.domain import Reservation
from reservations.observability import metrics
from tests.logic.conftest import NOW
from tests.support.fakes import FakeTable, ports


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


@pytest.fixture
def emitted() -> Iterator[dict[str, Any]]:
    metrics.clear_metrics()
    yield metrics.metric_set
    metrics.clear_metrics()


@pytest.fixture
def said(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level("DEBUG", logger="reservations")
    return caplog


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
