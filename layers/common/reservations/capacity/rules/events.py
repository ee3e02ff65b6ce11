"""The events of capacity lent and taken back: released, reclaimed (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from reservations.kernel.envelope import (
    EventContext,
    EventType,
    StoredEvent,
    declare_event_types,
)
from reservations.nodes import Reservation, reservation_event


@declare_event_types
class CapacityEvent(EventType):
    """Capacity lent and taken back: the types this slice builds."""

    RELEASED = "reservation.released"
    RECLAIMED = "reservation.reclaimed"


def reservation_released(
    context: EventContext, reservation: Reservation, unit_ids: Iterable[str], reason: str | None
) -> StoredEvent:
    """A release: the units named, and what is on the spot market after it."""
    return reservation_event(
        context,
        CapacityEvent.RELEASED,
        reservation,
        {
            "reason": reason,
            "unitIds": sorted(unit_ids),
            "releasedUnitIds": sorted(reservation.released_unit_ids),
        },
    )


def reservation_reclaimed(
    context: EventContext,
    reservation: Reservation,
    unit_ids: Iterable[str],
    reason: str | None,
    terminated: Iterable[str],
    skipped: Iterable[str],
    cause: Mapping[str, str] | None = None,
) -> StoredEvent:
    """A reclaim (real run): the units named, what stays released, the workloads terminated
    and those skipped (not spot); a placement's take-back says so (``cause``)."""
    return reservation_event(
        context,
        CapacityEvent.RECLAIMED,
        reservation,
        {
            "reason": reason,
            "unitIds": sorted(unit_ids),
            "releasedUnitIds": sorted(reservation.released_unit_ids),
            "terminated": sorted(terminated),
            "skipped": sorted(skipped),
            **(cause or {}),
        },
    )
