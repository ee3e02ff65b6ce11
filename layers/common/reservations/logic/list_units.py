"""``GET /v1/nodes/{nodeId}/reservations/units``: a node's GPU units as a caller may see them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from reservations.models.api import UnitView
from reservations.models.domain import Caller, NodeSnapshot, Unit
from reservations.models.errors import NotFound
from reservations.rules.access import READ, may_list_units
from reservations.rules.ids import is_resource_id
from reservations.rules.units import governing_reservation, is_released, not_reservable_reason

NodeLoader = Callable[[str], NodeSnapshot | None]


def list_units(
    caller: Caller, node_id: str, load_node: NodeLoader, now: datetime
) -> list[UnitView]:
    """The node's units sorted by id; the same 404 for unknown, malformed and not allowed."""
    # Rejecting these before the read keeps the answer identical and saves the Query.
    if not is_resource_id(node_id) or not caller.has(READ):
        raise NotFound()
    snapshot = load_node(node_id)
    if snapshot is None or not may_list_units(caller, snapshot, now):
        raise NotFound()
    return [_unit_view(unit, snapshot, now) for unit in sorted(snapshot.units, key=lambda u: u.id)]


def _unit_view(unit: Unit, snapshot: NodeSnapshot, now: datetime) -> UnitView:
    reason = not_reservable_reason(unit)
    governed = governing_reservation(unit.id, snapshot.reservations, now)
    return UnitView(
        id=unit.id,
        alloc_class=unit.alloc_class,
        gpu_model_id=unit.gpu_model_id,
        gpu_model_name=unit.gpu_model_name,
        sellable_gpus=unit.sellable_gpus,
        state="claimed" if unit.claimed_by else "free",
        claimed_by=unit.claimed_by,
        reservable=reason is None,
        not_reservable_reason=reason,
        reservation_id=governed[0].id if governed else None,
        released=is_released(governed[0], governed[1], unit.id) if governed else None,
    )
