"""The clock: ``reservation.activated``, ``.expiring`` and ``.expired``, each written once
per armed moment, at its moment, with no call on the node.

A scheduled pass (a minute in AWS, 10 s locally) reads each partition of the clock's sparse
index for the reservations whose next armed moment is due (``lifecycle.rules.clock``): what it
reads grows with the moments due, never with the fleet or its past. For each it reads the
reservation and its node again (strongly consistent, one request) and commits ONE
transaction per moment: the event, the reservation recording it fired and moving on in the
index, conditioned on the reservation's version and index place as read (and, for an
activation, on the node's topology as read), without bumping its version. An ``.expired``
is carried by the reservation's move into the node's history (the history mover's
transaction, conditioned the same way), with any moment still unfired before it.

Two passes at once: one commits, the other's condition fails and it moves on. A write
between the read and the commit: the moment is left to the next pass, which reads again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from enum import StrEnum

from aws_lambda_powertools.metrics import MetricUnit

from reservations.kernel.envelope import StoredEvent
from reservations.kernel.observability import logger, metrics
from reservations.kernel.settings import expiry_warning_minutes
from reservations.kernel.writes import WriteConflict
from reservations.lifecycle.rules.clock import (
    ACTIVATION_PASSED,
    ClockKind,
    ClockMoment,
    clock_shards,
    due_by,
    due_moments,
    next_moment,
    with_fired,
)
from reservations.lifecycle.rules.events import clock_event
from reservations.lifecycle.writes import ClockFire, HistoryMove
from reservations.nodes import (
    Node,
    NodePorts,
    Reservation,
    TopologyRead,
    changed_since_sold,
)

# A pass stops starting transactions with less than this left of its invocation (seconds).
CLOCK_RESERVE_SECONDS = 5.0
# How many due reservations one Query of a shard reads; a pass reads a shard's next page
# when it worked through one.
CLOCK_PAGE = 100


class ClockOutcome(StrEnum):
    FIRED = "fired"  # a moment written (or an activation a review passed)
    LEFT = "left"  # written or fired since it was listed: the next pass reads it again
    DEFERRED = "deferred"  # no time left in this invocation


def run_clock(ports: NodePorts, time_left: Callable[[], float]) -> dict[ClockOutcome, int]:
    """One pass over every partition of the clock's index, as far as the invocation
    allows (the rest waits for the next pass, each event's ``time`` still its moment)."""
    now = ports.clock()
    warning = expiry_warning_minutes()
    counts = dict.fromkeys(ClockOutcome, 0)
    for shard in clock_shards():
        seen: set[tuple[str, str]] = set()
        while time_left() >= CLOCK_RESERVE_SECONDS:
            page = ports.store.due_clock(shard, due_by(now), CLOCK_PAGE)
            listed = [key for key in page if key not in seen]
            for node_id, reservation_id in listed:
                seen.add((node_id, reservation_id))
                if time_left() < CLOCK_RESERVE_SECONDS:
                    counts[ClockOutcome.DEFERRED] += 1
                    continue
                counts[fire_due(ports, node_id, reservation_id, now, warning)] += 1
            if not listed:
                break
    _report(counts)
    return counts


def fire_due(
    ports: NodePorts,
    node_id: str,
    reservation_id: str,
    now: datetime,
    warning: int,
    listed_version: int | None = None,
) -> ClockOutcome:
    """Every moment of the reservation due at ``now``, in order, one transaction each (an
    ``.expired`` and what is unfired before it: one, the move). With ``listed_version``
    (the history mover's listing), a reservation written since is left to the next pass."""
    node, reservation = ports.store.load_reservation(node_id, reservation_id)
    if node is None or reservation is None or reservation.retained_until is not None:
        return ClockOutcome.LEFT
    if listed_version is not None and reservation.version != listed_version:
        return ClockOutcome.LEFT
    due = due_moments(reservation, warning, now)
    if not due:
        return ClockOutcome.LEFT
    try:
        if due[-1].kind is ClockKind.EXPIRED:
            move = HistoryMove(
                reservation, now, events=expiry_events(node, reservation, due, warning)
            )
            ports.store.commit(move)
            return ClockOutcome.FIRED
        for moment in due:
            fire = _fire(node, reservation, moment, warning)
            ports.store.commit(fire)
            reservation = _as_written(fire.after, warning)
    except WriteConflict:
        return ClockOutcome.LEFT
    return ClockOutcome.FIRED


def _as_written(reservation: Reservation, warning: int) -> Reservation:
    """The reservation as a fire left it, its place in the clock's index included: the next
    moment due in the same pass is conditioned on that place, not on the one first read."""
    moment = next_moment(reservation, warning)
    return replace(reservation, clock_read=None if moment is None else moment.key)


def _fire(node: Node, reservation: Reservation, moment: ClockMoment, warning: int) -> ClockFire:
    """One moment short of the end: its event (none for an activation under review), the
    reservation recording it."""
    if moment.kind is ClockKind.ACTIVATED:
        topology = TopologyRead(node.id, node.topology_gen)
        if changed_since_sold(reservation, node):
            after = with_fired(reservation, ACTIVATION_PASSED, moment.at)
            return ClockFire(reservation, after, topology)
        after = with_fired(reservation, moment.kind, moment.at)
        event = clock_event(node.owner_org_id, reservation, moment, warning)
        return ClockFire(reservation, after, topology, events=(event,))
    after = with_fired(reservation, moment.kind, moment.at)
    event = clock_event(node.owner_org_id, reservation, moment, warning)
    return ClockFire(reservation, after, events=(event,))


def expiry_events(
    node: Node, reservation: Reservation, due: list[ClockMoment], warning: int
) -> tuple[StoredEvent, ...]:
    """The events a move into history carries: each moment due and unfired, in order (an
    activation only where no review stands in the way), the ``.expired`` last."""
    under_review = changed_since_sold(reservation, node)
    return tuple(
        clock_event(node.owner_org_id, reservation, moment, warning)
        for moment in due
        if not (moment.kind is ClockKind.ACTIVATED and under_review)
    )


def _report(counts: dict[ClockOutcome, int]) -> None:
    metrics.add_metric(
        name="ClockMomentsFired", unit=MetricUnit.Count, value=counts[ClockOutcome.FIRED]
    )
    if counts[ClockOutcome.DEFERRED]:
        logger.warning("clock moments deferred", extra={"deferred": counts[ClockOutcome.DEFERRED]})
