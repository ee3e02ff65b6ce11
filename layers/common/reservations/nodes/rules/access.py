"""Who may see a node's units and who may act on a reservation.

Everyone who may not gets the same 404 as for an unknown node: the fleet stays unenumerable.
"""

from __future__ import annotations

from datetime import datetime

from reservations.kernel.caller import Caller
from reservations.nodes.models.partition import (
    ListAccess,
    NodeSnapshot,
    Reservation,
    ReservationStatus,
)
from reservations.nodes.rules.history import named_at
from reservations.nodes.rules.status import effective_status

READ = "reservation.read"
CAPACITY = "reservation.capacity"
NODE_WRITE = "node.write"
WRITE = "reservation.write"
PLACE = "workload.place"

# A manager keeps seeing the node while one of its reservations there is still live.
_MANAGER_VISIBLE = frozenset(
    {ReservationStatus.PENDING, ReservationStatus.ACTIVE, ReservationStatus.NEEDS_REVIEW}
)


def runs_the_node(caller: Caller, owner_org_id: str) -> bool:
    """The operator, or the node's owner: they may see and act on all of a node."""
    return caller.platform_operator or caller.org_id == owner_org_id


def may_list_units(caller: Caller, snapshot: NodeSnapshot, now: datetime) -> bool:
    """Operator, the node's owner, or a manager of a pending/active/needs-review reservation.

    Being in a reservation's audience (``allowedOrgIds``) does not count.
    """
    if not caller.has(READ):
        return False
    if runs_the_node(caller, snapshot.node.owner_org_id):
        return True
    return any(
        caller.org_id in reservation.managing_org_ids
        and effective_status(reservation, snapshot.node, now) in _MANAGER_VISIBLE
        for reservation in snapshot.reservations
    )


def may_manage_capacity(caller: Caller, snapshot: NodeSnapshot, reservation: Reservation) -> bool:
    """Operator, the node's owner, or one of this reservation's managing orgs."""
    if not caller.has(CAPACITY):
        return False
    managers = reservation.managing_org_ids
    return runs_the_node(caller, snapshot.node.owner_org_id) or caller.org_id in managers


def may_manage_capacity_of(caller: Caller, snapshot: NodeSnapshot, reservation_id: str) -> bool:
    """Release and reclaim, settled before the body: the operator, the node's owner, or a
    manager of this reservation (one the node does not have has no managers)."""
    reservation = next((r for r in snapshot.reservations if r.id == reservation_id), None)
    if reservation is None:
        return caller.has(CAPACITY) and runs_the_node(caller, snapshot.node.owner_org_id)
    return may_manage_capacity(caller, snapshot, reservation)


def may_write_reservations(caller: Caller, snapshot: NodeSnapshot) -> bool:
    """Create and cancel: ``reservation.write`` and the operator or the node's owner."""
    return caller.has(WRITE) and runs_the_node(caller, snapshot.node.owner_org_id)


def may_read_reservation(caller: Caller, snapshot: NodeSnapshot, reservation: Reservation) -> bool:
    """Operator and owner see every reservation of the node; others, those naming their org
    as a manager or in the audience."""
    if not caller.has(READ):
        return False
    named = (*reservation.managing_org_ids, *reservation.allowed_org_ids)
    return runs_the_node(caller, snapshot.node.owner_org_id) or caller.org_id in named


def sees_every_reservation(caller: Caller, access: ListAccess) -> bool:
    """The operator and the node's owner see every reservation of the node."""
    return runs_the_node(caller, access.owner_org_id)


def may_list_reservations(caller: Caller, access: ListAccess, now: datetime) -> bool:
    """``reservation.read`` and an org that sees some reservation of the node: the operator,
    the owner, or one that some reservation still readable at ``now`` names, on whatever
    page it sorts (decided over the whole node, not over what a page read)."""
    if not caller.has(READ):
        return False
    return sees_every_reservation(caller, access) or caller.org_id in named_at(
        access.named_until, now
    )


def may_place_workloads(caller: Caller) -> bool:
    """Place and end workloads (the platform scheduler's calls): ``workload.place``, operator
    keys only; decided before any read, as no node's data can change it."""
    return caller.has(PLACE) and caller.platform_operator


def may_write_nodes(caller: Caller) -> bool:
    """Register and update nodes, re-affirm reviewed reservations: the operator alone."""
    return caller.platform_operator and caller.has(NODE_WRITE)
