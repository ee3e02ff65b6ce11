"""The lifecycle slice: create, cancel, read, list, re-affirm, the history.

What other slices may use of it: they import it from here, never from its modules."""

from __future__ import annotations

from reservations.lifecycle.changes import Found, change, committed, decided, found
from reservations.lifecycle.errors import (
    ReservationNotActive,
    ReservationNotChangeable,
    UnitsNotInReservation,
)
from reservations.lifecycle.fleet import FleetQuery, list_fleet_reservations
from reservations.lifecycle.rules.events import reservation_updated
from reservations.lifecycle.rules.update import changes
from reservations.lifecycle.table import WRITERS
from reservations.lifecycle.table.fleet import FleetIndexTable
from reservations.lifecycle.writes import ReservationChange

__all__ = [
    "WRITERS",
    "FleetIndexTable",
    "FleetQuery",
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
    "list_fleet_reservations",
    "reservation_updated",
]
