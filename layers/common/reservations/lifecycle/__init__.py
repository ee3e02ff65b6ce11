"""The lifecycle slice: create, cancel, read, list, re-affirm, the history, and a reservation
as the API shows it (what every write on one answers with, capacity's too).

What other slices may use of it: they import it from here, never from its modules."""

from __future__ import annotations

from reservations.lifecycle.changes import Found, change, committed, decided, found
from reservations.lifecycle.errors import (
    ReservationNotActive,
    ReservationNotChangeable,
    UnitsNotInReservation,
)
from reservations.lifecycle.fleet import FleetQuery, indexed_nodes, list_fleet_reservations
from reservations.lifecycle.models import ReservationView
from reservations.lifecycle.rules.events import reservation_updated
from reservations.lifecycle.rules.update import changes
from reservations.lifecycle.table import WRITERS
from reservations.lifecycle.table.fleet import FleetIndexTable
from reservations.lifecycle.views import (
    reservation_answer,
    reservation_view,
    route_reservation_etag,
)
from reservations.lifecycle.writes import ReservationChange

__all__ = [
    "WRITERS",
    "FleetIndexTable",
    "FleetQuery",
    "Found",
    "ReservationChange",
    "ReservationNotActive",
    "ReservationNotChangeable",
    "ReservationView",
    "UnitsNotInReservation",
    "change",
    "changes",
    "committed",
    "decided",
    "found",
    "indexed_nodes",
    "list_fleet_reservations",
    "reservation_answer",
    "reservation_updated",
    "reservation_view",
    "route_reservation_etag",
]
