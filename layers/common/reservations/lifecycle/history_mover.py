"""The history mover: expired reservations leave their node's partition by themselves.

A scheduled pass lists the reservations still in a node's partition past their ``endsAt``
(the sparse index of live reservations' ends) and moves each into the node's history with
one transaction conditioned on the version it listed. A reservation written since (the
index lags, or a write came between) is left for the next pass; one already moved finds
nothing at that version and changes nothing. Readers never wait for it: past its
``endsAt`` a reservation is expired wherever it is.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from enum import StrEnum

from aws_lambda_powertools.metrics import MetricUnit

from reservations.kernel.observability import logger, metrics
from reservations.kernel.settings import expiry_warning_minutes
from reservations.lifecycle.clock import ClockOutcome, fire_due
from reservations.lifecycle.rules.history import due_to_move
from reservations.nodes import NodePorts, Reservation

# A pass stops starting moves with less than this left of its invocation (seconds): one
# move is one transaction, bounded by its client's deadline.
MOVE_RESERVE_SECONDS = 5.0


class MoveOutcome(StrEnum):
    MOVED = "moved"
    LEFT = "left"  # written since it was listed, or moved already: the next pass sees
    DEFERRED = "deferred"  # no time left in this invocation


def move_expired(ports: NodePorts, time_left: Callable[[], float]) -> dict[MoveOutcome, int]:
    """One pass: every reservation past its end moved, as far as the invocation allows;
    then, on each node it moved one of, the orgs named no more taken out of its list access
    (so that item holds the orgs of what is still readable, not of the node's whole past)."""
    now = ports.clock()
    counts = dict.fromkeys(MoveOutcome, 0)
    moved_on: set[str] = set()
    for reservation in ports.store.due_moves(now):
        if not due_to_move(reservation, now):
            continue
        outcome = _move(ports, reservation, now, time_left)
        counts[outcome] += 1
        if outcome is MoveOutcome.MOVED:
            moved_on.add(reservation.node_id)
    for node_id in sorted(moved_on):
        if time_left() >= MOVE_RESERVE_SECONDS:
            ports.store.prune_named(node_id, now)
    _report(counts)
    return counts


def _move(
    ports: NodePorts, reservation: Reservation, now: datetime, time_left: Callable[[], float]
) -> MoveOutcome:
    """The move, as the clock makes it: read again, and carrying its ``.expired`` (and any
    moment of the clock still unfired before it), so that whichever of the two passes moves
    it, the events are written once."""
    if time_left() < MOVE_RESERVE_SECONDS:
        return MoveOutcome.DEFERRED
    outcome = fire_due(
        ports,
        reservation.node_id,
        reservation.id,
        now,
        expiry_warning_minutes(),
        listed_version=reservation.version,
    )
    return MoveOutcome.MOVED if outcome is ClockOutcome.FIRED else MoveOutcome.LEFT


def _report(counts: dict[MoveOutcome, int]) -> None:
    metrics.add_metric(
        name="ReservationsMovedToHistory", unit=MetricUnit.Count, value=counts[MoveOutcome.MOVED]
    )
    if counts[MoveOutcome.DEFERRED]:
        logger.warning("history moves deferred", extra={"deferred": counts[MoveOutcome.DEFERRED]})
