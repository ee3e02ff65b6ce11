"""When a reservation's capacity may be lent (release) or taken back (reclaim), and what a
release leaves lent; the clock is passed in."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

from reservations.capacity.rules.plan import units_outside
from reservations.kernel.errors import FieldProblem
from reservations.lifecycle import ReservationNotActive, UnitsNotInReservation
from reservations.nodes import Node, Reservation, ReservationStatus, effective_status, in_term

# What a release or a reclaim may be refused with, on a reservation it may act on.
CapacityRefusal = ReservationNotActive | UnitsNotInReservation


def capacity_refusal(
    reservation: Reservation, node: Node, unit_ids: Sequence[str], now: datetime
) -> CapacityRefusal | None:
    """409 unless active and inside its term, then 422 naming each unit outside it at its
    place in the request (``unitIds[2]``); else None."""
    status = effective_status(reservation, node, now)
    if status is not ReservationStatus.ACTIVE:
        return ReservationNotActive(f"reservation {reservation.id} is {status.value}")
    if not in_term(reservation, now):
        return ReservationNotActive(
            f"reservation {reservation.id} is active but its term has not started"
        )
    if outside := units_outside(reservation, unit_ids):
        return UnitsNotInReservation(
            f"units not in reservation {reservation.id}: {', '.join(outside)}",
            [
                FieldProblem(f"unitIds[{index}]", f"{unit_id} is not reserved")
                for index, unit_id in enumerate(unit_ids)
                if unit_id in outside
            ],
        )
    return None


def released_after_release(
    reservation: Reservation, unit_ids: Collection[str]
) -> tuple[str, ...] | None:
    """The sorted ``releasedUnitIds`` once the named units join it; None when none is new
    (already released is fine: the write then changes nothing but writes its event)."""
    before = set(reservation.released_unit_ids)
    if before.issuperset(unit_ids):
        return None
    return tuple(sorted(before.union(unit_ids)))
