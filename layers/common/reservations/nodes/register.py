"""``PUT /v1/nodes/{nodeId}``: register a node or update its topology.

Decided from the node as read (rules.topology) and written by the write pipeline in one
conditional transaction, retried on a lost race: the node item and its changed units,
never a reservation (a reservation on a changed unit is under review because the node item
says when each unit changed: ``nodes.rules.status``), so a refused or superseded update changes
nothing. A node without a queue gets one before the write: a crash after it leaves a queue
and no node, and the retry finds the queue again; the other order could leave a node that
no one gives a queue. PUT is idempotent by itself: it takes no Idempotency-Key.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime

from reservations.kernel.caller import Caller
from reservations.kernel.envelope import StoredEvent
from reservations.kernel.errors import FieldProblem
from reservations.kernel.event_context import by_caller
from reservations.kernel.idempotency.models import Outcome
from reservations.kernel.pipeline import (
    Access,
    Body,
    Commit,
    Committed,
    Decision,
    Request,
    WriteSpec,
)
from reservations.kernel.wire import response_json
from reservations.kernel.writes import ItemVersion
from reservations.nodes.errors import StaleTopology, UnitsUnavailable
from reservations.nodes.models.partition import Node, NodeSnapshot, ReviewScope, Unit
from reservations.nodes.models.requests import NodeRequest, UnitSpec, parse_node_request
from reservations.nodes.models.writes import NodePut, UnitPut
from reservations.nodes.partition import node_partition, with_events
from reservations.nodes.ports import RegisterPorts
from reservations.nodes.rules import events as nodes_events
from reservations.nodes.rules.access import may_write_nodes
from reservations.nodes.rules.topology import (
    TopologyChange,
    claimed_removals,
    compare,
    stale_reason,
    to_review,
    unit_generations,
)
from reservations.nodes.views import node_view

# What a node's registration or update may be refused with.
NodeRefusal = StaleTopology | UnitsUnavailable


def decide(
    snapshot: NodeSnapshot | None, request: Request[NodeRequest], caller: Caller, now: datetime
) -> NodeRefusal | Decision[NodePut]:
    """201 with the new node, 200 with the updated one; nothing to write for a repeat of
    what is stored."""
    body = request.body
    change = compare(snapshot.units if snapshot else (), reported_units(body.units))
    if refusal := update_refusal(snapshot, body, change):
        return refusal
    unit_ids = [spec.id for spec in body.units]
    if snapshot is not None and _unchanged(snapshot, body, change):
        return Decision(None, Outcome(200, response_json(node_view(snapshot.node, unit_ids, now))))
    write = node_put(
        caller, request.route.params["nodeId"], snapshot, body, change, request.new_id(), now
    )
    node = write.node
    if snapshot is not None:  # the stored creation time stays
        node = replace(node, created_at=snapshot.node.created_at)
    answer = Outcome(
        201 if snapshot is None else 200, response_json(node_view(node, unit_ids, now))
    )
    return Decision(write, answer)


def reported_units(specs: Iterable[UnitSpec]) -> list[Unit]:
    """The units as the node reports them (not claimed, version 1 until stored)."""
    return [
        Unit(
            id=spec.id,
            alloc_class=spec.alloc_class,
            gpu_model_id=spec.gpu_model_id,
            gpu_model_name=spec.gpu_model_name,
            sellable_gpus=spec.sellable_gpus,
            sellable=spec.sellable,
            not_sellable_reason=spec.not_sellable_reason,
        )
        for spec in specs
    ]


def registered_node(
    node_id: str,
    owner_org_id: str,
    topology_gen: int | None,
    queue_url: str | None,
    version: int,
    now: datetime,
    unit_changed_at: dict[str, int],
) -> Node:
    """The node item a registration or update writes (the fleet loader writes the same):
    its fields in their declared order, registered and updated ``now``."""
    return Node(node_id, owner_org_id, topology_gen, queue_url, version, now, now, unit_changed_at)


def update_refusal(
    snapshot: NodeSnapshot | None, request: NodeRequest, change: TopologyChange
) -> NodeRefusal | None:
    """409 ``stale_topology``, then 409 ``units_unavailable`` for claimed units removed."""
    if snapshot is None:
        return None
    if reason := stale_reason(snapshot.node.topology_gen, request.topology_gen, change):
        return StaleTopology(f"node {snapshot.node.id}: {reason}")
    if refusals := claimed_removals(snapshot, change.removed):
        return UnitsUnavailable(
            f"node {snapshot.node.id}: units still claimed: "
            + ", ".join(unit_id for unit_id, _ in refusals),
            [FieldProblem("units", f"{unit_id}: {why}") for unit_id, why in refusals],
        )
    return None


def _unchanged(snapshot: NodeSnapshot, request: NodeRequest, change: TopologyChange) -> bool:
    """A repeat of what is stored (queue included) writes nothing: PUT is idempotent."""
    node = snapshot.node
    return (
        change.none
        and node.topology_gen == request.topology_gen
        and node.owner_org_id == request.owner_org_id
        and node.queue_url is not None
    )


def node_put(
    caller: Caller,
    node_id: str,
    snapshot: NodeSnapshot | None,
    request: NodeRequest,
    change: TopologyChange,
    write_id: str,
    now: datetime,
) -> NodePut:
    """The decision as one conditional write: the node (its queue as stored) with each
    unit's generation of last change, its new and changed units, and the unit items it no
    longer has."""
    read = snapshot.node.version if snapshot else None
    node = registered_node(
        node_id,
        request.owner_org_id,
        request.topology_gen,
        snapshot.node.queue_url if snapshot else None,
        (read or 0) + 1,
        now,
        unit_generations(snapshot, change, request.topology_gen),
    )
    reviewed = to_review(snapshot.reservations, snapshot.node, node, now) if snapshot else []
    return NodePut(
        write_id=write_id,
        node=node,
        node_read=read,
        placements_read=snapshot.node.placements if snapshot else 0,
        units=_unit_puts(snapshot, change),
        removed=tuple(ItemVersion(u.id, u.version) for u in change.removed),
        leftovers=_leftovers(snapshot, change),
        changed_unit_ids=tuple(sorted(change.affected_ids)),
        reviewed=len(reviewed),
        caller_org_id=caller.org_id,
        caller_key_id=caller.key_id,
        at=now,
    )


def _unit_puts(snapshot: NodeSnapshot | None, change: TopologyChange) -> tuple[UnitPut, ...]:
    """Changed units keep their claim and their hold (a take-back's); an added unit replaces
    an item an earlier update left (conditioned on its version as read), or is new."""
    left = {u.id: u.version for u in snapshot.unlisted_units} if snapshot else {}
    changed = [
        UnitPut(
            replace(
                new,
                claimed_by=old.claimed_by,
                held_for=old.held_for,
                version=old.version + 1,
            ),
            old.version,
        )
        for old, new in change.changed
    ]
    added = [
        UnitPut(replace(unit, version=left.get(unit.id, 0) + 1), left.get(unit.id))
        for unit in change.added
    ]
    return tuple(changed + added)


def _leftovers(snapshot: NodeSnapshot | None, change: TopologyChange) -> tuple[ItemVersion, ...]:
    """Unit items an earlier update had no room to delete, unless this one reports them."""
    if snapshot is None:
        return ()
    reported = {unit.id for unit in change.added}
    return tuple(
        ItemVersion(u.id, u.version) for u in snapshot.unlisted_units if u.id not in reported
    )


def with_queue(write: NodePut, ports: RegisterPorts) -> NodePut:
    """Before the first write of a node without a queue: its queue, made (idempotent)."""
    if write.node.queue_url is not None:
        return write
    return replace(write, node=replace(write.node, queue_url=ports.make_queue(write.node.id)))


def node_events(snapshot: NodeSnapshot | None, write: NodePut) -> tuple[StoredEvent, ...]:
    """``node.registered`` (every unit added), or ``node.updated`` with the units added,
    removed and changed (in class, model, GPUs or sellability) and, when it puts
    reservations under review, how many and its review scope: the relay derives each one's
    ``reservation.needs_review`` from it (``nodes.rules.events.reviews_derived``). Its item is
    bounded by the node's units, whatever the number of reservations."""
    node = write.node
    context = by_caller(write, node.id, node.owner_org_id, write.write_id)
    put_ids = [put.unit.id for put in write.units]
    gpus = {put.unit.id: put.unit.sellable_gpus for put in write.units}
    if snapshot is None:
        return (nodes_events.node_registered(context, node, put_ids, gpus),)
    before = {unit.id for unit in snapshot.units}
    removed = [unit.id for unit in write.removed]
    added = [unit_id for unit_id in put_ids if unit_id not in before]
    # Changed: in what a promise rests on (class, model, GPUs, sellability), as the node's
    # generations say; a new display name is written, and is no change to anyone's units.
    changed = [unit_id for unit_id in write.changed_unit_ids if unit_id in before - {*removed}]
    review = ReviewScope(
        change_id=write.write_id,
        topology_gen=node.topology_gen,
        unit_ids=frozenset({*write.changed_unit_ids, *removed}),
        before=snapshot.node.unit_changed_at,
        after=node.unit_changed_at or {},
    )
    updated = nodes_events.node_updated(
        context, node, added, removed, changed, write.reviewed, review, gpus
    )
    return (updated,)


def committed(write: NodePut) -> Committed:
    return Committed(
        "node written",
        {
            "topologyGen": write.node.topology_gen,
            "registered": write.node_read is None,
            "unitsPut": len(write.units),
            "unitsRemoved": [u.id for u in write.removed],
            "unitsChanged": list(write.changed_unit_ids),
            "reservationsReviewed": write.reviewed,
        },
        {"NodesWritten": 1},
    )


# Register and update nodes, re-affirm reviewed reservations: the operator alone.
OPERATOR: Access[NodeSnapshot | None] = Access(may_write_nodes)

PUT_NODE: WriteSpec[NodeRequest, NodeSnapshot | None, NodePut, RegisterPorts] = WriteSpec(
    name="NodeWrite",
    access=OPERATOR,
    body=Body(parse=parse_node_request, keyed=False),
    decide=decide,
    commit=Commit(
        partition=node_partition,
        committed=committed,
        before=with_queue,
        finish=with_events(node_events),
    ),
    conflict="node {nodeId} kept changing while it was written",
)
