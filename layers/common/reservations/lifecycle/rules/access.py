"""Who may create, cancel, read and list a node's reservations.

Everyone who may not gets the same 404 as for an unknown node: the fleet stays unenumerable.
"""

from __future__ import annotations

from datetime import datetime

from reservations.kernel.caller import Caller
from reservations.nodes import READ, ListAccess, NodeSnapshot, Reservation, named_at, runs_the_node

WRITE = "reservation.write"


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
