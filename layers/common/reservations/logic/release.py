"""``POST /v1/nodes/{nodeId}/reservations/{id}/release``: lend units to the spot market.

The mirror of reclaim: the same callers, the same window (active, inside its term), the same
body. Named units join ``releasedUnitIds``; nothing running is touched (a unit the audience
is using stays theirs until it is free). One conditional write on the reservation's version
with its audit record, through the write pipeline.
"""

from __future__ import annotations

from datetime import datetime

from reservations.logic import changes
from reservations.logic.pipeline import Decision, Request, WriteSpec
from reservations.models.domain import Caller, NodeSnapshot
from reservations.models.errors import ApiError
from reservations.models.requests import CapacityRequest, parse_capacity_request
from reservations.models.writes import ReservationChange
from reservations.rules.access import CAPACITY
from reservations.rules.capacity import capacity_refusal, released_after_release


def decide(
    snapshot: NodeSnapshot | None, request: Request[CapacityRequest], caller: Caller, now: datetime
) -> ApiError | Decision[ReservationChange]:
    """The named units lent; a dry run's, unwritten."""
    found = changes.managed_reservation(snapshot, request.route, caller)
    if isinstance(found, ApiError):
        return found
    node, reservation, body = found[0].node, found[1], request.body
    if refusal := capacity_refusal(reservation, node, body.unit_ids, now):
        return refusal
    release = changes.change(
        "release",
        caller,
        reservation,
        node,
        request.new_id(),
        now,
        released_after=released_after_release(reservation, body.unit_ids),
        unit_ids=tuple(sorted(body.unit_ids)),
        reason=body.reason,
    )
    return changes.decided(reservation, node, release, dry_run=body.dry_run)


RELEASE: WriteSpec[CapacityRequest, ReservationChange] = WriteSpec(
    name="Release",
    noun="release",
    conflict="reservation {reservationId} kept changing while releasing",
    permitted=lambda caller: caller.has(CAPACITY),
    may_on_node=changes.may_manage_capacity_on,
    parse=parse_capacity_request,
    dry_run=lambda body: body.dry_run,
    decide=decide,
    committed=changes.committed,
)
