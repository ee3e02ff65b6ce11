"""``POST /v1/nodes/{nodeId}/reservations/{id}/release``: lend units to the spot market.

The mirror of reclaim: the same callers, the same window (active, inside its term), the same
body. Named units join ``releasedUnitIds``; nothing running is touched (a unit the audience
is using stays theirs until it is free). One conditional write on the reservation's version
with its event, through the write pipeline.
"""

from __future__ import annotations

from datetime import datetime

from reservations.capacity.models import CapacityRequest, parse_capacity_request
from reservations.capacity.rules.lending import CapacityRefusal, released_after_release
from reservations.kernel.caller import Caller
from reservations.kernel.errors import (
    ApiError,
    NotFound,
    ReservationNotActive,
    UnitsNotInReservation,
)
from reservations.kernel.pipeline import Decision, Request, WriteSpec
from reservations.nodes.models.partition import NodeSnapshot
from reservations.nodes.models.writes import ReservationChange
from reservations.nodes.partition import node_partition, with_events
from reservations.nodes.ports import NodePorts
from reservations.reservations import changes


def decide(
    snapshot: NodeSnapshot | None, request: Request[CapacityRequest], caller: Caller, now: datetime
) -> NotFound | CapacityRefusal | Decision[ReservationChange]:
    """The named units lent; a dry run's, unwritten."""
    acted_on = changes.managed(snapshot, request, caller, now)
    if isinstance(acted_on, ApiError):
        return acted_on
    body, reservation = request.body, acted_on[1]
    released = released_after_release(reservation, body.unit_ids)
    lent = tuple(sorted(body.unit_ids))
    release = changes.change(
        "release", caller, acted_on, request, now, released_after=released, unit_ids=lent
    )
    return changes.decided(acted_on, release, dry_run=body.dry_run)


RELEASE: WriteSpec[CapacityRequest, NodeSnapshot | None, ReservationChange, NodePorts] = WriteSpec(
    name="Release",
    conflict="reservation {reservationId} kept changing while releasing",
    access=changes.MANAGERS,
    parse=parse_capacity_request,
    dry_run=lambda body: body.dry_run,
    decide=decide,
    finish=with_events(changes.change_events),
    partition=node_partition,
    refusals=(ReservationNotActive, UnitsNotInReservation),
    committed=changes.committed,
)
