"""``POST /v1/nodes/{nodeId}/reservations/{id}/release``: lend units to the spot market.

The mirror of reclaim: the same callers, the same window (active, inside its term), the same
body. Named units join ``releasedUnitIds``; nothing running is touched (a unit the audience
is using stays theirs until it is free). One conditional write on the reservation's version
with its event, through the write pipeline.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from reservations.capacity.managing import MANAGERS, managed
from reservations.capacity.models import CapacityRequest, parse_capacity_request
from reservations.capacity.rules import events as capacity_events
from reservations.capacity.rules.idle import after_release
from reservations.capacity.rules.lending import CapacityRefusal, released_after_release
from reservations.kernel.caller import Caller
from reservations.kernel.envelope import StoredEvent
from reservations.kernel.errors import (
    ApiError,
    NotFound,
)
from reservations.kernel.event_context import by_caller
from reservations.kernel.pipeline import Body, Commit, Decision, Request, WriteSpec
from reservations.lifecycle import (
    ReservationChange,
    change,
    committed,
    decided,
    route_reservation_etag,
)
from reservations.nodes import NodePorts, NodeSnapshot, node_partition, with_events


def decide(
    snapshot: NodeSnapshot | None, request: Request[CapacityRequest], caller: Caller, now: datetime
) -> NotFound | CapacityRefusal | Decision[ReservationChange]:
    """The named units lent; a dry run's, unwritten."""
    body = request.body
    acted_on = managed(snapshot, request.route, caller, now, body.unit_ids)
    if isinstance(acted_on, ApiError):
        return acted_on
    reservation = acted_on[1]
    released = released_after_release(reservation, body.unit_ids)
    lent = tuple(sorted(body.unit_ids))
    release = change(
        "release", caller, acted_on, request, now, released_after=released, unit_ids=lent
    )
    newly = sorted(set(released or ()) - set(reservation.released_unit_ids))
    if newly and reservation.lending is not None:
        release = replace(release, lending_after=after_release(reservation, newly, now))
    return decided(acted_on, release, dry_run=body.dry_run)


def release_events(
    snapshot: NodeSnapshot | None, change: ReservationChange
) -> tuple[StoredEvent, ...]:
    """``reservation.released``: the units named, what is released after it (also when
    nothing changed)."""
    assert snapshot is not None  # a change is only decided on a node it read
    context = by_caller(change, change.node_id, snapshot.node.owner_org_id, change.write_id)
    before = next(r for r in snapshot.reservations if r.id == change.reservation.id)
    after = change.applied_to(before)
    return (capacity_events.reservation_released(context, after, change.unit_ids, change.reason),)


RELEASE: WriteSpec[CapacityRequest, NodeSnapshot | None, ReservationChange, NodePorts] = WriteSpec(
    name="Release",
    access=MANAGERS,
    body=Body(parse=parse_capacity_request, dry_run=lambda body: body.dry_run),
    decide=decide,
    commit=Commit(
        partition=node_partition, committed=committed, finish=with_events(release_events)
    ),
    conflict="reservation {reservationId} kept changing while releasing",
    etag=route_reservation_etag,
)
