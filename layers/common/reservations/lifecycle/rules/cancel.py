"""When a reservation may be cancelled; the clock is passed in."""

from __future__ import annotations

from datetime import datetime

from reservations.lifecycle.errors import ReservationNotActive
from reservations.nodes import Node, Reservation, ReservationStatus, effective_status

# What has not ended may end early; expired and cancelled ones are over.
CANCELLABLE = frozenset(
    {ReservationStatus.PENDING, ReservationStatus.ACTIVE, ReservationStatus.NEEDS_REVIEW}
)


def cancel_refusal(
    reservation: Reservation, node: Node, now: datetime
) -> ReservationNotActive | None:
    """409 naming the effective status unless it is pending, active or needs-review."""
    status = effective_status(reservation, node, now)
    if status in CANCELLABLE:
        return None
    return ReservationNotActive(f"reservation {reservation.id} is {status.value}")
