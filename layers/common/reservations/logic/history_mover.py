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
from enum import StrEnum

from aws_lambda_powertools.metrics import MetricUnit

from reservations.logic.ports import Ports
from reservations.models.writes import HistoryMove, WriteConflict
from reservations.observability import logger, metrics
from reservations.rules.history import due_to_move

# A pass stops starting moves with less than this left of its invocation (seconds): one
# move is one transaction, bounded by its client's deadline.
MOVE_RESERVE_SECONDS = 5.0


class MoveOutcome(StrEnum):
    MOVED = "moved"
    LEFT = "left"  # written since it was listed, or moved already: the next pass sees
    DEFERRED = "deferred"  # no time left in this invocation


def move_expired(ports: Ports, time_left: Callable[[], float]) -> dict[MoveOutcome, int]:
    """One pass: every reservation past its end moved, as far as the invocation allows."""
    now = ports.clock()
    counts = dict.fromkeys(MoveOutcome, 0)
    for reservation in ports.store.due_moves(now):
        if not due_to_move(reservation, now):
            continue
        if time_left() < MOVE_RESERVE_SECONDS:
            counts[MoveOutcome.DEFERRED] += 1
            continue
        try:
            ports.store.commit(HistoryMove(reservation, now))
        except WriteConflict:
            counts[MoveOutcome.LEFT] += 1
            continue
        counts[MoveOutcome.MOVED] += 1
    _report(counts)
    return counts


def _report(counts: dict[MoveOutcome, int]) -> None:
    metrics.add_metric(
        name="ReservationsMovedToHistory", unit=MetricUnit.Count, value=counts[MoveOutcome.MOVED]
    )
    if counts[MoveOutcome.DEFERRED]:
        logger.warning("history moves deferred", extra={"deferred": counts[MoveOutcome.DEFERRED]})
