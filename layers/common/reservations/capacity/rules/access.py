"""Who may release and reclaim capacity on a node: the operator, the node's owner, or a
manager of the reservation."""

from __future__ import annotations

from reservations.kernel.caller import Caller
from reservations.nodes import NodeSnapshot, Reservation, runs_the_node

CAPACITY = "reservation.capacity"


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
