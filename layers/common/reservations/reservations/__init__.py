"""The reservations slice: create, cancel, read, list, re-affirm, the history.

What other slices may use of it: they import it from here, never from its modules."""

from __future__ import annotations

from reservations.reservations.changes import Found, change, committed, decided, found
from reservations.reservations.errors import (
    ReservationNotActive,
    ReservationNotChangeable,
    UnitsNotInReservation,
)
from reservations.reservations.rules.events import reservation_updated
from reservations.reservations.rules.update import changes
from reservations.reservations.table import WRITERS
from reservations.reservations.writes import ReservationChange

__all__ = [
    "WRITERS",
    "Found",
    "ReservationChange",
    "ReservationNotActive",
    "ReservationNotChangeable",
    "UnitsNotInReservation",
    "change",
    "changes",
    "committed",
    "decided",
    "found",
    "reservation_updated",
]
