"""The lifecycle slice: create, cancel, read, list, re-affirm, the history.

What other slices may use of it: they import it from here, never from its modules."""

from __future__ import annotations

from reservations.lifecycle.changes import Found, change, committed, decided, found
from reservations.lifecycle.errors import (
    ReservationNotActive,
    ReservationNotChangeable,
    UnitsNotInReservation,
)
from reservations.lifecycle.rules.events import reservation_updated
from reservations.lifecycle.rules.update import changes
from reservations.lifecycle.table import WRITERS
from reservations.lifecycle.writes import ReservationChange

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
