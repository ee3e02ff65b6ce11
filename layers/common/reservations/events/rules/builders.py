"""The event of each kind of change, built from the decision alone (pure: no clock, no I/O).

Each builder takes the write's :class:`EventContext` (node, owner, write id, time, actor) and
what changed, and answers the :class:`StoredEvent` the write puts in its own transaction:
the CloudEvent and who besides the operator and the node's owner may see it. The event's id
is derived from the node, the write's id, the type and the subject, so a write that is
rebuilt on a retry, or a stream record relayed twice, carries the same id.

``data`` holds what the type's consumers need; optional values are absent, never null.
Times inside ``data`` are as the API shows them (to the second), but ``time`` of a
``workload.terminated`` (the node's own report time, to the millisecond).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from reservations.events.models import EventType
from reservations.kernel.envelope import CloudEvent, EventContext, StoredEvent
from reservations.kernel.times import format_event_time, format_time, to_millisecond
from reservations.nodes.models.partition import (
    Node,
    Reservation,
    ReviewScope,
    Termination,
    Workload,
)
from reservations.nodes.rules.topology import reviewed_units

EVENT_ID_PREFIX = "evt-"
_ID_LENGTH = 26  # base32 characters: 130 bits of the digest


def event_id(node_id: str, change_id: str, event_type: EventType, subject: str) -> str:
    """``evt-`` and 26 lower-case base32 characters of a SHA-256 over what identifies the
    event: the same inputs, the same id."""
    digest = hashlib.sha256(
        "\x00".join((node_id, change_id, event_type.value, subject)).encode()
    ).digest()
    return EVENT_ID_PREFIX + base64.b32encode(digest).decode().lower()[:_ID_LENGTH]


def _present(data: Mapping[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in data.items() if value is not None}


def _event(
    context: EventContext,
    event_type: EventType,
    subject: str,
    data: Mapping[str, Any],
    audience: Iterable[str],
) -> StoredEvent:
    event = CloudEvent(
        id=event_id(context.node_id, context.change_id, event_type, subject),
        type=event_type,
        node_id=context.node_id,
        subject=subject,
        time=to_millisecond(context.at),
        data=_present(data),
        actor=context.actor,
    )
    return StoredEvent(event, context.owner_org_id, frozenset(audience))


def _optional_time(moment: datetime | None) -> str | None:
    return format_time(moment) if moment is not None else None


# --- reservations: seen by their managers and audience ---------------------------------------


def _reservation_event(
    context: EventContext, event_type: EventType, reservation: Reservation, data: Mapping[str, Any]
) -> StoredEvent:
    audience = (*reservation.managing_org_ids, *reservation.allowed_org_ids)
    return _event(context, event_type, f"reservations/{reservation.id}", data, audience)


def reservation_created(context: EventContext, reservation: Reservation) -> StoredEvent:
    """A create: the reservation's terms as made."""
    return _reservation_event(
        context,
        EventType.RESERVATION_CREATED,
        reservation,
        {
            "status": reservation.status.value,
            "startsAt": format_time(reservation.starts_at),
            "endsAt": _optional_time(reservation.ends_at),
            "unitIds": sorted(reservation.reserved_unit_ids),
            "allowedOrgIds": list(reservation.allowed_org_ids),
            "managingOrgIds": list(reservation.managing_org_ids),
            "contractRef": reservation.contract_ref,
            "reason": reservation.reason,
            "topologyGen": reservation.topology_gen,
        },
    )


def reservation_released(
    context: EventContext, reservation: Reservation, unit_ids: Iterable[str], reason: str | None
) -> StoredEvent:
    """A release: the units named, and what is on the spot market after it."""
    return _reservation_event(
        context,
        EventType.RESERVATION_RELEASED,
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
) -> StoredEvent:
    """A reclaim (real run): the units named, what stays released, the workloads terminated
    and those skipped (not spot)."""
    return _reservation_event(
        context,
        EventType.RESERVATION_RECLAIMED,
        reservation,
        {
            "reason": reason,
            "unitIds": sorted(unit_ids),
            "releasedUnitIds": sorted(reservation.released_unit_ids),
            "terminated": sorted(terminated),
            "skipped": sorted(skipped),
        },
    )


def reservation_cancelled(
    context: EventContext, reservation: Reservation, reason: str | None, status_before: str
) -> StoredEvent:
    """A cancel: why, and the effective status it ended."""
    return _reservation_event(
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
    return _reservation_event(
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


def reservation_needs_review(
    context: EventContext,
    reservation: Reservation,
    topology_gen: int | None,
    unit_ids: Iterable[str],
) -> StoredEvent:
    """A node update changed or removed units the reservation holds (``unit_ids``)."""
    return _reservation_event(
        context,
        EventType.RESERVATION_NEEDS_REVIEW,
        reservation,
        {"topologyGen": topology_gen, "unitIds": sorted(unit_ids)},
    )


# --- workloads: seen by the workload's org (and, for terminations, the reclaimers) ----------


def _workload_data(workload: Workload) -> dict[str, Any]:
    return {
        "kind": workload.kind.value,
        "tier": workload.tier.value,
        "orgId": workload.org_id,
        "unitIds": sorted(workload.unit_ids),
    }


def workload_placed(context: EventContext, workload: Workload) -> StoredEvent:
    """A placement: the workload as placed."""
    return _event(
        context,
        EventType.WORKLOAD_PLACED,
        f"workloads/{workload.id}",
        _workload_data(workload),
        (workload.org_id,),
    )


def workload_ended(
    context: EventContext, workload: Workload, freed_unit_ids: Iterable[str]
) -> StoredEvent:
    """An end (the workload stopped on its own): the units it freed, and the termination it
    closed, if one was open."""
    data = {
        **_workload_data(workload),
        "freedUnitIds": sorted(freed_unit_ids),
        "terminationId": workload.termination.id if workload.termination else None,
    }
    return _event(
        context, EventType.WORKLOAD_ENDED, f"workloads/{workload.id}", data, (workload.org_id,)
    )


def termination_requested(
    context: EventContext,
    workload: Workload,
    termination_id: str,
    reservation: Reservation,
    reason: str | None,
) -> StoredEvent:
    """A reclaim terminates the workload: which reservation took its units back, why, and
    when. Seen by the workload's org and that reservation's managers too."""
    data = {
        **_workload_data(workload),
        "terminationId": termination_id,
        "reservationId": reservation.id,
        "reason": reason,
        "requestedAt": format_time(context.at),
    }
    audience = (workload.org_id, *reservation.managing_org_ids)
    return _event(
        context,
        EventType.WORKLOAD_TERMINATION_REQUESTED,
        f"workloads/{workload.id}",
        data,
        audience,
    )


def workload_terminated(
    context: EventContext,
    workload: Workload,
    outcome: str,
    stopped_at: datetime,
    reclaiming_managers: Iterable[str],
) -> StoredEvent:
    """The node reported the workload stopped (``terminated``) or already not running
    (``gone``), at ``stopped_at`` (its report's time): what billing stops at."""
    data = {
        **_workload_data(workload),
        "outcome": outcome,
        "time": format_event_time(stopped_at),
        **_termination_data(workload.termination),
    }
    return _event(
        context,
        EventType.WORKLOAD_TERMINATED,
        f"workloads/{workload.id}",
        data,
        (workload.org_id, *reclaiming_managers),
    )


def termination_stuck(context: EventContext, workload: Workload, deliveries: int) -> StoredEvent:
    """The sweeper flagged the termination: delivered ``deliveries`` times without a report.
    The operator's and the node owner's business only."""
    data = {
        **_workload_data(workload),
        **_termination_data(workload.termination),
        "deliveries": deliveries,
    }
    return _event(
        context, EventType.WORKLOAD_TERMINATION_STUCK, f"workloads/{workload.id}", data, ()
    )


def _termination_data(termination: Termination | None) -> dict[str, Any]:
    """The termination an event is about: its id, reservation and when it was asked for."""
    if termination is None:
        return {"terminationId": None, "reservationId": None, "requestedAt": None}
    return {
        "terminationId": termination.id,
        "reservationId": termination.reservation_id,
        "requestedAt": _optional_time(termination.requested_at),
    }


# --- nodes: the operator's and the owner's ------------------------------------------------------


def node_registered(context: EventContext, node: Node, unit_ids: Iterable[str]) -> StoredEvent:
    """A new node: its generation and units (all added)."""
    data = {
        "topologyGen": node.topology_gen,
        "addedUnitIds": sorted(unit_ids),
        "removedUnitIds": [],
        "changedUnitIds": [],
    }
    return _event(context, EventType.NODE_REGISTERED, f"nodes/{node.id}", data, ())


def node_updated(
    context: EventContext,
    node: Node,
    added: Iterable[str],
    removed: Iterable[str],
    changed: Iterable[str],
    reviewed: int = 0,
    review: ReviewScope | None = None,
) -> StoredEvent:
    """A node update: its generation and the units added, removed and changed; and, when it
    puts reservations under review, how many (``reviewedReservationCount``, as the update
    read them) and its ``review`` scope, from which the relay derives their
    ``reservation.needs_review`` (:func:`reviews_derived`). Bounded by the node's units,
    whatever the number of its reservations."""
    data = {
        "topologyGen": node.topology_gen,
        "addedUnitIds": sorted(added),
        "removedUnitIds": sorted(removed),
        "changedUnitIds": sorted(changed),
        "reviewedReservationCount": reviewed or None,
    }
    updated = _event(context, EventType.NODE_UPDATED, f"nodes/{node.id}", data, ())
    return replace(updated, review=review if reviewed else None)


def reviews_derived(updated: StoredEvent, reservations: Iterable[Reservation]) -> list[StoredEvent]:
    """The ``reservation.needs_review`` of each of ``reservations`` the node update put under
    review (none without a review scope): in the update's context (its write's id, time and
    actor), so the same reservation always gets the same event, the same id, however often
    and whenever it is derived."""
    scope = updated.review if isinstance(updated.review, ReviewScope) else None
    if scope is None:
        return []
    event = updated.event
    context = EventContext(
        event.node_id, updated.owner_org_id, scope.change_id, event.time, event.actor
    )
    return [
        reservation_needs_review(context, reservation, scope.topology_gen, unit_ids)
        for reservation in reservations
        if (unit_ids := reviewed_units(scope, reservation, event.time))
    ]
