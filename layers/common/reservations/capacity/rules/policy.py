"""When a reservation's lending policy may be set or removed (pure: the clock is passed in)."""

from __future__ import annotations

from datetime import datetime

from reservations.kernel.errors import FieldProblem
from reservations.lifecycle import ReservationNotChangeable
from reservations.nodes import Node, Reservation, ReservationStatus, effective_status

# A policy governs a reservation still to come or running: one under review is re-affirmed
# first, one that ended lends nothing.
CHANGEABLE = frozenset({ReservationStatus.PENDING, ReservationStatus.ACTIVE})


def policy_refusal(
    reservation: Reservation, node: Node, now: datetime
) -> ReservationNotChangeable | None:
    """409 ``reservation_not_changeable`` naming its status unless it is pending or active."""
    status = effective_status(reservation, node, now)
    if status in CHANGEABLE:
        return None
    return ReservationNotChangeable(
        f"reservation {reservation.id} is {status.value}",
        [FieldProblem("status", f"is {status.value}")],
    )
