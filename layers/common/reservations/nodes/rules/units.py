"""Reservability of a unit and the reservation that governs it."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from reservations.nodes.models.partition import (
    RESERVABLE_ALLOC_CLASSES,
    Node,
    Reservation,
    ReservationStatus,
    Unit,
)
from reservations.nodes.rules.status import effective_status

_GOVERNING = frozenset({ReservationStatus.ACTIVE, ReservationStatus.NEEDS_REVIEW})

# (unit id, why) for a unit a reservation may not take or keep: held, claimed, not
# reservable, or (a node update) still claimed by a workload.
UnitReason = tuple[str, str]


def not_reservable_reason(unit: Unit) -> str | None:
    """Why ``unit`` cannot be reserved, in words a person understands; None when it can.

    A unit is reservable exactly when it is sellable and its allocation class is one that
    reservations sell (``vfio-group`` or ``device-request``).
    """
    reasons = []
    if not unit.sellable:
        reasons.append(
            f"unit is not sellable: {unit.not_sellable_reason}"
            if unit.not_sellable_reason
            else "unit is not sellable"
        )
    if unit.alloc_class not in RESERVABLE_ALLOC_CLASSES:
        reasons.append(f"allocation class {unit.alloc_class} is not reservable")
    return "; ".join(reasons) or None


def governing_reservation(
    unit_id: str, reservations: Iterable[Reservation], node: Node, now: datetime
) -> tuple[Reservation, ReservationStatus] | None:
    """The ``active`` or ``needs-review`` reservation whose ``reservedUnitIds`` holds the unit
    (by effective status: an ended review is expired and governs nothing).

    Reservations of one node do not overlap on a unit while live; should bad data make two
    match, the one with the smallest id wins, so the answer is at least stable.
    """
    for reservation in sorted(reservations, key=lambda r: r.id):
        if unit_id not in reservation.reserved_unit_ids:
            continue
        status = effective_status(reservation, node, now)
        if status in _GOVERNING:
            return reservation, status
    return None


def is_released(reservation: Reservation, status: ReservationStatus, unit_id: str) -> bool:
    """On the spot market right now; a ``needs-review`` reservation withholds its units."""
    return status is ReservationStatus.ACTIVE and unit_id in reservation.released_unit_ids
