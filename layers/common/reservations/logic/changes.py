"""What the writes on one reservation share (release, cancel, reclaim): the reservation the
caller may act on, and for release and cancel the change as one write, its answer and its
log line."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from reservations.logic.pipeline import Committed, Decision, Route
from reservations.logic.views import reservation_view
from reservations.models.api import response_json
from reservations.models.domain import Caller, Node, NodeSnapshot, Reservation, ReservationStatus
from reservations.models.errors import NotFound
from reservations.models.idempotency import Outcome
from reservations.models.writes import ItemVersion, ReservationChange, TopologyRead
from reservations.rules.access import (
    may_manage_capacity,
    may_manage_capacity_of,
    may_write_reservations,
)
from reservations.rules.status import effective_status


def reservation_in(
    snapshot: NodeSnapshot | None,
    route: Route,
    allowed: Callable[[NodeSnapshot, Reservation], bool],
) -> NotFound | tuple[NodeSnapshot, Reservation]:
    """The node as read and the route's reservation on it; the same 404 as an unknown node
    for an unknown reservation or one the caller may not act on."""
    if snapshot is None:
        return NotFound()
    reservation_id = route.params["reservationId"]
    reservation = next((r for r in snapshot.reservations if r.id == reservation_id), None)
    if reservation is None or not allowed(snapshot, reservation):
        return NotFound()
    return snapshot, reservation


def managed_reservation(
    snapshot: NodeSnapshot | None, route: Route, caller: Caller
) -> NotFound | tuple[NodeSnapshot, Reservation]:
    """The route's reservation, for a caller who may manage its capacity (release, reclaim)."""
    return reservation_in(snapshot, route, lambda read, r: may_manage_capacity(caller, read, r))


def may_manage_capacity_on(caller: Caller, snapshot: NodeSnapshot, route: Route) -> bool:
    """Whether the caller may release or reclaim anything of the route's reservation here."""
    return may_manage_capacity_of(caller, snapshot, route.params["reservationId"])


def may_write_reservations_on(caller: Caller, snapshot: NodeSnapshot, _route: Route) -> bool:
    """Whether the caller may create or cancel reservations on this node (its owner)."""
    return may_write_reservations(caller, snapshot)


def change(
    action: str,
    caller: Caller,
    reservation: Reservation,
    node: Node,
    write_id: str,
    now: datetime,
    *,
    released_after: tuple[str, ...] | None,
    status_after: ReservationStatus | None = None,
    unit_ids: tuple[str, ...] = (),
    reason: str | None = None,
) -> ReservationChange:
    """The decision as one write on the reservation's version and the node's topology (which
    its effective status was read from)."""
    return ReservationChange(
        write_id=write_id,
        action=action,
        node_id=reservation.node_id,
        reservation=ItemVersion(reservation.id, reservation.version),
        topology=TopologyRead(node.id, node.topology_gen),
        released_after=released_after,
        status_after=status_after,
        reason=reason,
        caller_org_id=caller.org_id,
        caller_key_id=caller.key_id,
        unit_ids=unit_ids,
        released_before=reservation.released_unit_ids,
        status_before=effective_status(reservation, node, now),
        at=now,
    )


def decided(
    reservation: Reservation, node: Node, change: ReservationChange, dry_run: bool = False
) -> Decision[ReservationChange]:
    """The change (unwritten for a dry run) and 200 with the reservation as it leaves it."""
    after = change.applied_to(reservation)
    view = reservation_view(after, node, change.at, after.released_unit_ids, after.updated_at)
    return Decision(None if dry_run else change, Outcome(200, response_json(view)))


def committed(change: ReservationChange) -> Committed:
    return Committed(
        f"{change.action} committed",
        {
            "nodeId": change.node_id,
            "reservationId": change.reservation.id,
            "callerOrgId": change.caller_org_id,
            "callerKeyId": change.caller_key_id,
            "units": list(change.unit_ids),
            "changed": change.writes_reservation,
        },
        {f"Reservation{change.action.title()}s": 1},
    )
