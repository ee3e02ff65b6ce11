"""The events of a reservation's own changes: created, cancelled, re-affirmed, updated
(pure)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from reservations.kernel.envelope import (
    EventContext,
    EventType,
    StoredEvent,
    SystemActor,
    declare_event_types,
    optional_time,
)
from reservations.kernel.times import format_time
from reservations.lifecycle.rules.clock import (
    MOMENT_NAMES,
    ClockKind,
    ClockMoment,
)
from reservations.nodes import (
    Reservation,
    reservation_event,
)


@declare_event_types
class ReservationEvent(EventType):
    """A reservation's own changes: the types this slice builds."""

    CREATED = "reservation.created"
    CANCELLED = "reservation.cancelled"
    REAFFIRMED = "reservation.reaffirmed"
    UPDATED = "reservation.updated"
    ACTIVATED = "reservation.activated"
    EXPIRING = "reservation.expiring"
    EXPIRED = "reservation.expired"


def reservation_created(context: EventContext, reservation: Reservation) -> StoredEvent:
    """A create: the reservation's terms as made."""
    return reservation_event(
        context,
        ReservationEvent.CREATED,
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
        ReservationEvent.CANCELLED,
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
        ReservationEvent.REAFFIRMED,
        reservation,
        {
            "reason": reason,
            "status": reservation.status.value,
            "topologyGen": reservation.topology_gen,
            "unitIds": sorted(reservation.reserved_unit_ids),
        },
    )


def reservation_updated(
    context: EventContext,
    after: Reservation,
    changes: dict[str, dict[str, Any]],
    removed: dict[str, list[str]],
    reason: str | None,
) -> StoredEvent:
    """A PATCH: each field that changed, ``{"from", "to"}``, and the reason given. Seen by
    the reservation's audience and managers after it, and by each org the change no longer
    names (``removed``: the lists it left), which sees only that it left them, nothing of
    who else is named."""
    event = reservation_event(
        context,
        ReservationEvent.UPDATED,
        after,
        {"changes": changes, "reason": reason},
    )
    views = {
        org: {"changes": {name: {"removed": True} for name in lists}}
        for org, lists in removed.items()
    }
    return replace(event, audience_org_ids=event.audience_org_ids | set(removed), views=views)


def clock_event(
    owner_org_id: str, reservation: Reservation, moment: ClockMoment, warning_minutes: int
) -> StoredEvent:
    """``reservation.activated`` / ``.expiring`` / ``.expired``: by the clock, at its moment
    (its ``time``), naming the moment it stands for. Its id is the moment's own, so a pass
    that writes it again (it never commits twice) makes the same event."""
    named = MOMENT_NAMES[moment.kind]
    context = EventContext(
        reservation.node_id,
        owner_org_id,
        f"{reservation.id}@{moment.key}",
        moment.at,
        SystemActor("clock"),
    )
    data: dict[str, object] = {
        "moment": named,
        "startsAt": format_time(reservation.starts_at),
        "endsAt": optional_time(reservation.ends_at),
        "unitIds": sorted(reservation.reserved_unit_ids),
    }
    if moment.kind is ClockKind.EXPIRING:
        data["warningMinutes"] = warning_minutes
    return reservation_event(context, _CLOCK_TYPES[moment.kind], reservation, data)


_CLOCK_TYPES = {
    ClockKind.ACTIVATED: ReservationEvent.ACTIVATED,
    ClockKind.EXPIRING: ReservationEvent.EXPIRING,
    ClockKind.EXPIRED: ReservationEvent.EXPIRED,
}
