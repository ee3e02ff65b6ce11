"""Effective reservation status: the stored status as the clock makes it."""

from __future__ import annotations

from datetime import datetime

from reservations.models.domain import Reservation, ReservationStatus


def effective_status(reservation: Reservation, now: datetime) -> ReservationStatus:
    """``pending`` turns ``active`` at ``startsAt``; ``active`` turns ``expired`` at ``endsAt``.

    A reservation that is both past its start and its end reads as expired, even if it was
    stored as pending. ``cancelled`` and ``needs-review`` stay as stored.
    """
    status = reservation.status
    if status is ReservationStatus.PENDING and now >= reservation.starts_at:
        status = ReservationStatus.ACTIVE
    if (
        status is ReservationStatus.ACTIVE
        and reservation.ends_at is not None
        and now >= reservation.ends_at
    ):
        status = ReservationStatus.EXPIRED
    return status


def in_term(reservation: Reservation, now: datetime) -> bool:
    """Whether ``now`` lies in ``[startsAt, endsAt)`` (no ``endsAt``: open-ended)."""
    if now < reservation.starts_at:
        return False
    return reservation.ends_at is None or now < reservation.ends_at
