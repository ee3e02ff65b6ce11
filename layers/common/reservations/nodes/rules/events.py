"""The events of a node's own changes (registered, updated, and the reviews an update
derives), and what every event about a reservation or a workload on it is made of (pure:
no clock, no I/O)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from reservations.kernel.envelope import (
    EventContext,
    EventType,
    StoredEvent,
    declare_event_types,
    new_event,
)
from reservations.kernel.times import format_event_time
from reservations.nodes.models.partition import (
    Node,
    Reservation,
    ReviewScope,
    Workload,
    WorkloadUse,
)
from reservations.nodes.rules.topology import reviewed_units


@declare_event_types
class NodeEvent(EventType):
    """A node's own changes, and the reviews an update derives: the types this slice builds."""

    REGISTERED = "node.registered"
    UPDATED = "node.updated"
    RESERVATION_NEEDS_REVIEW = "reservation.needs_review"


def reservation_event(
    context: EventContext, event_type: EventType, reservation: Reservation, data: Mapping[str, Any]
) -> StoredEvent:
    audience = (*reservation.managing_org_ids, *reservation.allowed_org_ids)
    return new_event(context, event_type, f"reservations/{reservation.id}", data, audience)


def reservation_needs_review(
    context: EventContext,
    reservation: Reservation,
    topology_gen: int | None,
    unit_ids: Iterable[str],
) -> StoredEvent:
    """A node update changed or removed units the reservation holds (``unit_ids``)."""
    return reservation_event(
        context,
        NodeEvent.RESERVATION_NEEDS_REVIEW,
        reservation,
        {"topologyGen": topology_gen, "unitIds": sorted(unit_ids)},
    )


def workload_data(workload: Workload, use: WorkloadUse | None = None) -> dict[str, Any]:
    """The workload's fields every event about it carries; an ending event's (``use``, its
    own use to that end) also ``usedFrom`` and ``usedTo`` (to the millisecond, as an event's
    ``time``) and ``gpuMs``."""
    data: dict[str, Any] = {
        "kind": workload.kind.value,
        "tier": workload.tier.value,
        "orgId": workload.org_id,
        "unitIds": sorted(workload.unit_ids),
    }
    if use is not None:
        data |= {
            "usedFrom": format_event_time(use.used_from),
            "usedTo": format_event_time(use.used_to),
            "gpuMs": use.gpu_ms,
        }
    return data


def _units(unit_ids: Iterable[str], gpus: Mapping[str, int] | None) -> list[dict[str, Any]]:
    """Each unit added or changed with its ``sellableGpus``: what usage counts GPU-ms by."""
    known = gpus or {}
    return [{"id": u, "sellableGpus": known[u]} for u in sorted(set(unit_ids)) if u in known]


def node_registered(
    context: EventContext,
    node: Node,
    unit_ids: Iterable[str],
    gpus: Mapping[str, int] | None = None,
) -> StoredEvent:
    """A new node: its generation and units (all added), each with its GPUs (``gpus``)."""
    added = sorted(unit_ids)
    data = {
        "topologyGen": node.topology_gen,
        "addedUnitIds": added,
        "removedUnitIds": [],
        "changedUnitIds": [],
        "units": _units(added, gpus),
    }
    return new_event(context, NodeEvent.REGISTERED, f"nodes/{node.id}", data, ())


def node_updated(
    context: EventContext,
    node: Node,
    added: Iterable[str],
    removed: Iterable[str],
    changed: Iterable[str],
    reviewed: int = 0,
    review: ReviewScope | None = None,
    gpus: Mapping[str, int] | None = None,
) -> StoredEvent:
    """A node update: its generation and the units added, removed and changed (those added
    or changed each with its GPUs, from ``gpus``); and, when it
    puts reservations under review, how many (``reviewedReservationCount``, as the update
    read them) and its ``review`` scope, from which the relay derives their
    ``reservation.needs_review`` (:func:`reviews_derived`). Bounded by the node's units,
    whatever the number of its reservations."""
    added, changed = list(added), list(changed)
    data = {
        "topologyGen": node.topology_gen,
        "addedUnitIds": sorted(added),
        "removedUnitIds": sorted(removed),
        "changedUnitIds": sorted(changed),
        "reviewedReservationCount": reviewed or None,
        "units": _units((*added, *changed), gpus),
    }
    updated = new_event(context, NodeEvent.UPDATED, f"nodes/{node.id}", data, ())
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
