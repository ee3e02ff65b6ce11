"""When a reservation is history, since when, and until when it stays readable.

Ended reservations (effective status ``cancelled`` or ``expired``) leave the node's partition
for its history: a cancel moves its own, the history mover moves the expired ones. Readers
never wait for the move (past its ``endsAt`` a reservation is expired wherever it is); the
history keeps it ``HistoryRetentionDays`` after it ended, then it is gone (404).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from reservations.models.domain import Reservation, ReservationStatus

# The last moment a stored time can name (years 1970-9999, ``models.times``).
_LAST = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)


def ended_at(reservation: Reservation) -> datetime:
    """A cancelled reservation ended at its cancel (its last write); any other at its
    ``endsAt`` (an open-ended one ends only by a cancel: its last write then)."""
    if reservation.status is ReservationStatus.CANCELLED or reservation.ends_at is None:
        return reservation.updated_at
    return reservation.ends_at


def retained_until(reservation: Reservation, retention_days: int) -> datetime:
    """``retention_days`` after it ended, within year 9999."""
    end = ended_at(reservation)
    if _LAST - end <= timedelta(days=retention_days):
        return _LAST
    return end + timedelta(days=retention_days)


def due_to_move(reservation: Reservation, now: datetime) -> bool:
    """An expired reservation the mover may take out of the node's partition: past its
    ``endsAt`` (a cancelled one moves with its cancel)."""
    return reservation.ends_at is not None and now >= reservation.ends_at
