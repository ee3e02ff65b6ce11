"""A fleet node's reservations and workloads, made by the API's own rules where the file's
state is one the API could reach at load time, and stated directly otherwise.

The loader builds each node the way the API would have, in the order the API needs: the
registered node and its units, then each reservation in the file's order, then each
workload. At each step the node as built so far is what the rules read:

- a reservation goes through what ``POST …/reservations`` parses and decides
  (``parse_create_request``, ``decide_create``: the term, units held by another reservation,
  units not reservable), with the file's id and the load time as "now"; when the file lends
  units, then through release's rules (``parse_capacity_request``, ``capacity_refusal``,
  ``released_after_release``);
- a ``running`` workload goes through what ``POST …/workloads`` parses and decides
  (``parse_place_request``, ``placement_refusal``: free, open to its org at its tier, sellable)
  and is made by ``placed_workload``; its units are claimed before the next one is placed.

Whatever those rules refuse is a state the API could not have reached at load time: a term
that started more than 5 minutes before the load, a status only a later event makes
(``needs-review``, ``cancelled``, ``expired``, a termination under way), a spot workload on a
unit nobody released. It is stored as the file states it, with the same item builders, and
its :class:`Route` says which rule refused it. Nothing is refused here: the file's own
schema is what holds those states.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from reservations.capacity.models import parse_capacity_request
from reservations.capacity.rules.lending import capacity_refusal, released_after_release
from reservations.kernel.bodies import RawBody
from reservations.kernel.errors import ApiError
from reservations.kernel.times import format_time
from reservations.lifecycle.create import decide_create
from reservations.lifecycle.models import parse_create_request
from reservations.nodes.models.partition import (
    Node,
    NodeSnapshot,
    Reservation,
    ReservationStatus,
    Termination,
    Workload,
    WorkloadState,
)
from reservations.workloads.models import parse_place_request
from reservations.workloads.scheduler import placed_workload, placement_refusal
from reservations_tools.fleet.model import (
    FleetNode,
    FleetReservation,
    FleetWorkload,
    fleet_termination_id,
)

CREATED = frozenset({ReservationStatus.PENDING, ReservationStatus.ACTIVE})
# What the API does to reach a state a create or a placement never makes.
_REACHED_BY = {
    ReservationStatus.NEEDS_REVIEW: "a topology change",
    ReservationStatus.CANCELLED: "a cancel",
    ReservationStatus.EXPIRED: "the end of its term",
    WorkloadState.TERMINATING: "a reclaim",
    WorkloadState.TERMINATED: "a termination's report",
}


@dataclass(frozen=True, slots=True)
class Route:
    """How one reservation or workload of the file was made: by the API calls named in
    ``rules``, or as stated, ``because`` a rule refused it at load time."""

    node_id: str
    kind: str  # "reservation" or "workload"
    id: str
    rules: str | None = None
    because: str | None = None

    def __str__(self) -> str:
        how = f"by {self.rules}" if self.rules else f"as stated: {self.because}"
        return f"node {self.node_id}, {self.kind} {self.id}: {how}"


@dataclass(frozen=True, slots=True)
class BuiltNode:
    """The node's partition as the loader writes it, and how each item was made."""

    snapshot: NodeSnapshot
    routes: tuple[Route, ...]


class _Refused(Exception):
    """A rule of the API refused a step: the item is stored as the file states it."""


def build_node(fleet_node: FleetNode, snapshot: NodeSnapshot, loaded_at: datetime) -> BuiltNode:
    """Reservations, then workloads, each made by the API's rules on the node built so far,
    or as stated when a rule refuses; ``snapshot`` is the registered node and its units."""
    routes = []
    for stated in fleet_node.reservations:
        try:
            reservation, rules = _created(stated, snapshot, loaded_at)
            route = Route(snapshot.node.id, "reservation", stated.id, rules=rules)
        except _Refused as refusal:
            reservation = stated.to_domain(snapshot.node.id, loaded_at)
            route = Route(snapshot.node.id, "reservation", stated.id, because=str(refusal))
        snapshot = replace(snapshot, reservations=(*snapshot.reservations, reservation))
        routes.append(route)
    for stated_workload in fleet_node.workloads:
        try:
            workload = _placed(stated_workload, snapshot, loaded_at)
            route = Route(snapshot.node.id, "workload", stated_workload.id, rules="place")
        except _Refused as refusal:
            workload = _stated_workload(fleet_node, snapshot.node, stated_workload, loaded_at)
            route = Route(snapshot.node.id, "workload", stated_workload.id, because=str(refusal))
        snapshot = _with_workload(snapshot, workload)
        routes.append(route)
    return BuiltNode(snapshot, tuple(routes))


def _created(
    stated: FleetReservation, snapshot: NodeSnapshot, now: datetime
) -> tuple[Reservation, str]:
    """The reservation a create (and a release, when the file lends units) makes now."""
    if stated.status not in CREATED:
        raise _Refused(f"status {stated.status.value}: only {_REACHED_BY[stated.status]} makes it")
    if stated.created_at is not None or stated.updated_at is not None:
        raise _Refused("the file gives its createdAt or updatedAt")
    request = _decided(parse_create_request, RawBody(_create_body(stated)))
    made = _decided(decide_create, snapshot, request, lambda: stated.id, now)
    if isinstance(made, ApiError):
        raise _Refused(_explained(made))
    if made.status is not stated.status:
        raise _Refused(
            f"status {stated.status.value}, but a create at the load time makes it "
            f"{made.status.value} (startsAt {format_time(made.starts_at)})"
        )
    if stated.topology_gen not in (None, made.topology_gen):
        raise _Refused(f"topologyGen {stated.topology_gen}, but the node's is {made.topology_gen}")
    if not stated.released_unit_ids:
        return made, "create"
    lent_body = RawBody(json.dumps({"unitIds": stated.released_unit_ids}))
    lent = _decided(parse_capacity_request, lent_body)
    if refusal := capacity_refusal(made, snapshot.node, lent.unit_ids, now):
        raise _Refused(_explained(refusal))
    released = released_after_release(made, lent.unit_ids) or made.released_unit_ids
    return replace(made, released_unit_ids=released), "create, release"


def _create_body(stated: FleetReservation) -> str:
    """The body the node's owner would send to create the file's reservation."""
    body: dict[str, Any] = {
        "unitIds": stated.reserved_unit_ids,
        "allowedOrgIds": stated.allowed_org_ids,
        "managingOrgIds": stated.managing_org_ids,
        "startsAt": format_time(stated.starts_at),
        "endsAt": format_time(stated.ends_at) if stated.ends_at else None,
        "contractRef": stated.contract_ref,
        "reason": stated.reason,
    }
    return json.dumps({name: value for name, value in body.items() if value is not None})


def _placed(stated: FleetWorkload, snapshot: NodeSnapshot, now: datetime) -> Workload:
    """The workload a placement makes now, on the node as built so far."""
    if stated.state is not WorkloadState.RUNNING:
        raise _Refused(f"state {stated.state.value}: only {_REACHED_BY[stated.state]} makes it")
    body = {
        "id": stated.id,
        "kind": stated.kind.value,
        "tier": stated.tier.value,
        "orgId": stated.org_id,
        "unitIds": stated.unit_ids,
    }
    request = _decided(parse_place_request, RawBody(json.dumps(body)))
    if refusal := placement_refusal(snapshot, request, now):
        raise _Refused(_explained(refusal))
    return placed_workload(request, now)


def _decided(decide: Any, *arguments: Any) -> Any:
    """``decide(*arguments)``; an ApiError it raises (a 400, 409 or 422) is a refusal."""
    try:
        return decide(*arguments)
    except ApiError as error:
        raise _Refused(_explained(error)) from error


def _explained(error: ApiError) -> str:
    """The API's answer in one line: its code, and each field's problem (else its message)."""
    problems = "; ".join(f"{d.field}: {d.problem}" for d in error.details)
    return f"{error.code}: {problems or error.message}"


def _stated_workload(
    fleet_node: FleetNode, node: Node, stated: FleetWorkload, loaded_at: datetime
) -> Workload:
    """The workload as the file states it; a termination under way must be findable by the
    sweeper, and its message must name the reservation the units go back to."""
    terminating = stated.state is WorkloadState.TERMINATING
    reservation_id = fleet_node.termination_reservation_id(stated, node, loaded_at)
    termination_id = stated.termination_id or (
        fleet_termination_id(fleet_node.id, stated.id) if terminating else None
    )
    termination = None
    if termination_id is not None:
        termination = Termination(
            termination_id,
            reservation_id=reservation_id if terminating else None,
            # A fleet file states it terminating: asked for at the load, to the second as
            # every time the load writes (a reclaim's commit keeps its milliseconds).
            requested_at=loaded_at.replace(microsecond=0) if terminating else None,
        )
    return Workload(
        id=stated.id,
        kind=stated.kind,
        tier=stated.tier,
        org_id=stated.org_id,
        unit_ids=tuple(stated.unit_ids),
        state=stated.state,
        termination=termination,
    )


def _with_workload(snapshot: NodeSnapshot, workload: Workload) -> NodeSnapshot:
    """The node once ``workload`` is on it: a live one claims its units."""
    held = set(workload.unit_ids) if workload.claiming else set()
    units = tuple(
        replace(unit, claimed_by=workload.claim) if unit.id in held else unit
        for unit in snapshot.units
    )
    return replace(snapshot, units=units, workloads=(*snapshot.workloads, workload))
