"""Who may see a node's units and write nodes, who runs a node, and which orgs the node's
list access still names (what every slice's own access rules start from:
``<slice>/rules/access.py``).

Everyone who may not gets the same 404 as for an unknown node: the fleet stays unenumerable.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from reservations.kernel.caller import Caller
from reservations.nodes.models.partition import (
    NodeSnapshot,
    ReservationStatus,
)
from reservations.nodes.rules.status import effective_status

READ = "reservation.read"
NODE_WRITE = "node.write"

# A manager keeps seeing the node while one of its reservations there is still live.
_MANAGER_VISIBLE = frozenset(
    {ReservationStatus.PENDING, ReservationStatus.ACTIVE, ReservationStatus.NEEDS_REVIEW}
)


def runs_the_node(caller: Caller, owner_org_id: str) -> bool:
    """The operator, or the node's owner: they may see and act on all of a node."""
    return caller.platform_operator or caller.org_id == owner_org_id


def named_at(named: Mapping[str, datetime], now: datetime) -> frozenset[str]:
    """The orgs still named at ``now`` (``ListAccess.named_until``): some reservation naming
    them is live, or in the history within its retention (``lifecycle.rules.history``)."""
    return frozenset(org_id for org_id, until in named.items() if now < until)


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


def may_write_nodes(caller: Caller) -> bool:
    """Register and update nodes, re-affirm reviewed reservations: the operator alone."""
    return caller.platform_operator and caller.has(NODE_WRITE)
