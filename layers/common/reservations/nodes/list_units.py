"""``GET /v1/nodes/{nodeId}/reservations/units``: a node's GPU units as a caller may see them."""

from __future__ import annotations

from datetime import datetime

from reservations.kernel.caller import Caller
from reservations.kernel.errors import NotFound
from reservations.kernel.ids import is_resource_id
from reservations.nodes.models.views import UnitView
from reservations.nodes.ports import NodeReader
from reservations.nodes.rules.access import READ, may_list_units
from reservations.nodes.views import unit_view


def list_units(caller: Caller, node_id: str, nodes: NodeReader, now: datetime) -> list[UnitView]:
    """The node's units sorted by id; the same 404 for unknown, malformed and not allowed."""
    # Rejecting these before the read keeps the answer identical and saves the Query.
    if not is_resource_id(node_id) or not caller.has(READ):
        raise NotFound()
    snapshot = nodes.load_node(node_id)
    if snapshot is None or not may_list_units(caller, snapshot, now):
        raise NotFound()
    return [unit_view(unit, snapshot, now) for unit in sorted(snapshot.units, key=lambda u: u.id)]
