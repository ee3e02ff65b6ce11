"""Who may lend and take back a reservation's units, and the reservation a release or a
reclaim acts on: release and reclaim share them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from reservations.capacity.rules.access import CAPACITY, may_manage_capacity, may_manage_capacity_of
from reservations.capacity.rules.lending import CapacityRefusal, capacity_refusal
from reservations.kernel.caller import Caller
from reservations.kernel.errors import NotFound
from reservations.kernel.pipeline import Access, Route
from reservations.lifecycle import Found, found
from reservations.nodes import NodeSnapshot


def managed(
    snapshot: NodeSnapshot | None,
    route: Route,
    caller: Caller,
    now: datetime,
    unit_ids: Sequence[str] = (),
) -> CapacityRefusal | NotFound | Found:
    """Release, reclaim: the route's reservation, for a caller who may manage its capacity,
    active with the named units reserved by it."""
    acted_on = found(
        snapshot,
        route,
        lambda read, reservation: may_manage_capacity(caller, read, reservation),
    )
    if isinstance(acted_on, NotFound):
        return acted_on
    read, reservation = acted_on
    return capacity_refusal(reservation, read.node, unit_ids, now) or acted_on


def _may_manage_capacity_on(caller: Caller, snapshot: NodeSnapshot | None, route: Route) -> bool:
    return snapshot is not None and may_manage_capacity_of(
        caller, snapshot, route.params["reservationId"]
    )


# Release and reclaim: ``reservation.capacity``, and the operator, the node's owner or a
# manager of the route's reservation.
MANAGERS: Access[NodeSnapshot | None] = Access(
    lambda caller: caller.has(CAPACITY), _may_manage_capacity_on
)
