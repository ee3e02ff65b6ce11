"""What the writes on one reservation share (cancel, re-affirm, and the capacity slice's
release and reclaim): the reservation the caller may act on now, and for release and cancel
the change as one write, its answer and its log line."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any

from reservations.kernel.caller import Caller
from reservations.kernel.errors import NotFound
from reservations.kernel.pipeline import Access, Committed, Decision, Request, Route
from reservations.kernel.writes import ItemVersion
from reservations.lifecycle.rules.access import WRITE, may_write_reservations
from reservations.lifecycle.rules.history import named_after_end, naming_the_same
from reservations.lifecycle.views import reservation_answer, reservation_view
from reservations.lifecycle.writes import ReservationChange
from reservations.nodes import (
    NodeSnapshot,
    Reservation,
    ReservationStatus,
    TopologyRead,
    effective_status,
)

Found = tuple[NodeSnapshot, Reservation]


def found(
    snapshot: NodeSnapshot | None,
    route: Route,
    allowed: Callable[[NodeSnapshot, Reservation], bool],
) -> NotFound | Found:
    """The node as read and the route's reservation on it; the same 404 as an unknown node
    for an unknown reservation or one the caller may not act on (the caller's rule then
    says whether this call on it may be made now)."""
    if snapshot is None:
        return NotFound()
    reservation_id = route.params["reservationId"]
    reservation = next((r for r in snapshot.reservations if r.id == reservation_id), None)
    if reservation is None or not allowed(snapshot, reservation):
        return NotFound()
    return snapshot, reservation


def _may_write_reservations_on(
    caller: Caller, snapshot: NodeSnapshot | None, _route: Route
) -> bool:
    return snapshot is not None and may_write_reservations(caller, snapshot)


# Create and cancel: ``reservation.write``, and the operator or the node's owner.
OWNERS: Access[NodeSnapshot | None] = Access(
    lambda caller: caller.has(WRITE), _may_write_reservations_on
)


def change(
    action: str,
    caller: Caller,
    acted_on: Found,
    request: Request[Any],
    now: datetime,
    *,
    released_after: tuple[str, ...] | None,
    status_after: ReservationStatus | None = None,
    unit_ids: tuple[str, ...] = (),
) -> ReservationChange:
    """The decision as one write on the reservation's version and the node's topology (which
    its effective status was read from), with the body's reason."""
    node, reservation = acted_on[0].node, acted_on[1]
    return ReservationChange(
        write_id=request.new_id(),
        action=action,
        node_id=reservation.node_id,
        reservation=ItemVersion(reservation.id, reservation.version),
        topology=TopologyRead(node.id, node.topology_gen),
        released_after=released_after,
        status_after=status_after,
        reason=request.body.reason,
        caller_org_id=caller.org_id,
        caller_key_id=caller.key_id,
        unit_ids=unit_ids,
        released_before=reservation.released_unit_ids,
        status_before=effective_status(reservation, node, now),
        at=now,
    )


def ended(change: ReservationChange, acted_on: Found, retention_days: int) -> ReservationChange:
    """A change that ends the reservation: it leaves the node's partition for its history in
    the same write, and the orgs it names are named until its history's end unless another
    reservation names them longer (those reservations checked at their versions read)."""
    snapshot, reservation = acted_on
    after = change.applied_to(reservation)
    named_by = naming_the_same(snapshot.reservations, reservation)
    before, until, deciding = named_after_end(after, named_by, retention_days)
    return replace(
        change,
        ended=after,
        named_until={org: until[org] for org in until if until[org] != before[org]},
        named_deciding=tuple(ItemVersion(r.id, r.version) for r in deciding),
        node_version=snapshot.node.version,
    )


def decided(
    acted_on: Found, change: ReservationChange, dry_run: bool = False
) -> Decision[ReservationChange]:
    """The change (unwritten for a dry run) and 200 with the reservation as it leaves it,
    and its tag after the write; a dry run's, the tag it ran against (the version a real
    run would be conditioned on with If-Match: nothing was written)."""
    node, before = acted_on[0].node, acted_on[1]
    after = change.applied_to(before)
    tag = None
    if dry_run:  # the tag of the reservation as read, which is its view's
        tag = reservation_view(
            before, node, change.at, before.released_unit_ids, before.updated_at
        ).etag
    view = reservation_view(after, node, change.at, after.released_unit_ids, after.updated_at, tag)
    return Decision(None if dry_run else change, reservation_answer(view))


def committed(change: ReservationChange) -> Committed:
    return Committed(
        f"{change.action} committed",
        {
            "units": list(change.unit_ids),
            "changed": change.writes_reservation,
        },
        {f"Reservation{change.action.title()}s": 1},
    )
