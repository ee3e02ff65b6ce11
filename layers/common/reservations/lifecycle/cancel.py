"""``POST /v1/nodes/{nodeId}/reservations/{id}/cancel``: end a reservation early.

The operator or the node's owner, while it is pending, active or needs-review. It becomes
``cancelled`` with nothing released, so its units stop being governed; running workloads
keep running. One conditional write on the reservation's version with its audit record,
through the write pipeline, which moves it out of the node's partition into its history.
"""

from __future__ import annotations

from datetime import datetime

from reservations.kernel.caller import Caller
from reservations.kernel.envelope import StoredEvent
from reservations.kernel.errors import NotFound
from reservations.kernel.event_context import by_caller
from reservations.kernel.pipeline import Body, Commit, Decision, Request, WriteSpec
from reservations.kernel.settings import settings
from reservations.lifecycle.changes import OWNERS, change, committed, decided, ended, found
from reservations.lifecycle.errors import ReservationNotActive
from reservations.lifecycle.models import CancelRequest, parse_cancel_request
from reservations.lifecycle.rules import events as reservations_events
from reservations.lifecycle.rules.access import may_write_reservations
from reservations.lifecycle.rules.cancel import cancel_refusal
from reservations.lifecycle.views import route_reservation_etag
from reservations.lifecycle.writes import ReservationChange
from reservations.nodes import (
    NodePorts,
    NodeSnapshot,
    ReservationStatus,
    node_partition,
    with_events,
)


def decide(
    snapshot: NodeSnapshot | None, request: Request[CancelRequest], caller: Caller, now: datetime
) -> NotFound | ReservationNotActive | Decision[ReservationChange]:
    """Any reservation of a node the caller may write reservations on, cancelled."""
    acted_on = found(
        snapshot,
        request.route,
        lambda read, _reservation: may_write_reservations(caller, read),
    )
    if isinstance(acted_on, NotFound):
        return acted_on
    if refusal := cancel_refusal(acted_on[1], acted_on[0].node, now):
        return refusal
    status = ReservationStatus.CANCELLED
    cancelled = change(
        "cancel", caller, acted_on, request, now, released_after=(), status_after=status
    )
    retention = settings().history_retention_days
    moved = ended(cancelled, acted_on, retention)
    return decided(acted_on, moved)


def cancel_events(
    snapshot: NodeSnapshot | None, change: ReservationChange
) -> tuple[StoredEvent, ...]:
    """``reservation.cancelled``, with the effective status it ended."""
    assert snapshot is not None  # a change is only decided on a node it read
    context = by_caller(change, change.node_id, snapshot.node.owner_org_id, change.write_id)
    before = next(r for r in snapshot.reservations if r.id == change.reservation.id)
    after = change.applied_to(before)
    status = change.status_before.value
    return (reservations_events.reservation_cancelled(context, after, change.reason, status),)


CANCEL: WriteSpec[CancelRequest, NodeSnapshot | None, ReservationChange, NodePorts] = WriteSpec(
    name="Cancel",
    access=OWNERS,
    body=Body(parse=parse_cancel_request),
    decide=decide,
    commit=Commit(partition=node_partition, committed=committed, finish=with_events(cancel_events)),
    conflict="reservation {reservationId} kept changing while cancelling",
    etag=route_reservation_etag,
)
