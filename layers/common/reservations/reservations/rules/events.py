"""The events of a reservation's own changes: created, cancelled, re-affirmed (pure)."""

from __future__ import annotations

from reservations.kernel.envelope import (
    EventContext,
    EventType,
    StoredEvent,
    optional_time,
)
from reservations.kernel.times import format_time
from reservations.nodes import Reservation, reservation_event


def reservation_created(context: EventContext, reservation: Reservation) -> StoredEvent:
    """A create: the reservation's terms as made."""
    return reservation_event(
        context,
        EventType.RESERVATION_CREATED,
        reservation,
        {
            "status": reservation.status.value,
            "startsAt": format_time(reservation.starts_at),
            "endsAt": optional_time(reservation.ends_at),
            "unitIds": sorted(reservation.reserved_unit_ids),
            "allowedOrgIds": list(reservation.allowed_org_ids),
            "managingOrgIds": list(reservation.managing_org_ids),
            "contractRef": reservation.contract_ref,
            "reason": reservation.reason,
            "topologyGen": reservation.topology_gen,
        },
    )


def reservation_cancelled(
    context: EventContext, reservation: Reservation, reason: str | None, status_before: str
) -> StoredEvent:
    """A cancel: why, and the effective status it ended."""
    return reservation_event(
        context,
        EventType.RESERVATION_CANCELLED,
        reservation,
        {
            "reason": reason,
            "previousStatus": status_before,
            "unitIds": sorted(reservation.reserved_unit_ids),
        },
    )


def reservation_reaffirmed(
    context: EventContext, reservation: Reservation, reason: str | None
) -> StoredEvent:
    """A re-affirm: the generation and the stored status the reservation takes."""
    return reservation_event(
        context,
        EventType.RESERVATION_REAFFIRMED,
        reservation,
        {
            "reason": reason,
            "status": reservation.status.value,
            "topologyGen": reservation.topology_gen,
            "unitIds": sorted(reservation.reserved_unit_ids),
        },
    )
