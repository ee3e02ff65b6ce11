"""``PUT /v1/nodes/{nodeId}``: register a node or update its topology.

Read the node (one strongly consistent Query), decide (rules.topology), make its queue if it
has none, then write it all in one conditional transaction, retried on a lost race: the
node item and its changed units, never a reservation (a reservation on a changed unit is
under review because the node item says when each unit changed: ``rules.status``), so a
refused or superseded update changes nothing. The queue comes first: a crash after it
leaves a queue and no node, and the retry finds the queue again; the other order could
leave a node that no one gives a queue.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime

from reservations.logic.ports import NodePorts
from reservations.logic.retries import retried
from reservations.logic.views import node_view
from reservations.models.api import response_json
from reservations.models.domain import Caller, Node, NodeSnapshot, Unit
from reservations.models.errors import FieldProblem, NotFound, StaleTopology, UnitsUnavailable
from reservations.models.idempotency import Outcome
from reservations.models.ids import is_resource_id
from reservations.models.node_requests import NodeRequest, UnitSpec, parse_node_request
from reservations.models.requests import RawBody
from reservations.models.writes import ItemVersion, NodeWrite, UnitPut, WriteConflict
from reservations.observability import logger
from reservations.rules.access import may_write_nodes
from reservations.rules.topology import (
    TopologyChange,
    claimed_removals,
    compare,
    stale_reason,
    to_review,
    unit_generations,
)


def put_node(caller: Caller, node_id: str, body: RawBody, ports: NodePorts) -> Outcome:
    """201 with the new node, 200 with the updated one, or an ApiError."""
    if not (is_resource_id(node_id) and may_write_nodes(caller)):
        raise NotFound()
    request = parse_node_request(body)
    return retried(
        lambda: _attempt(caller, node_id, request, ports),
        ports.sleep,
        "NodeWrite",
        f"node {node_id} kept changing while it was written",
    )


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
    """The node item a registration or update writes (the fleet loader writes the same)."""
    return Node(
        id=node_id,
        owner_org_id=owner_org_id,
        topology_gen=topology_gen,
        queue_url=queue_url,
        version=version,
        created_at=now,
        updated_at=now,
        unit_changed_at=unit_changed_at,
    )


def _attempt(
    caller: Caller, node_id: str, request: NodeRequest, ports: NodePorts
) -> Outcome | None:
    """Read, decide, write once; None when a concurrent writer won and it must run again."""
    now = ports.clock()
    snapshot = ports.store.load_node(node_id)
    change = compare(snapshot.units if snapshot else (), reported_units(request.units))
    check_update(snapshot, request, change)
    unit_ids = [spec.id for spec in request.units]
    if snapshot is not None and _unchanged(snapshot, request, change):
        return Outcome(200, response_json(node_view(snapshot.node, unit_ids, now)))
    queue_url = snapshot.node.queue_url if snapshot else None
    write = node_write(caller, node_id, snapshot, request, change, queue_url, now)
    if queue_url is None:
        write = replace(write, node=replace(write.node, queue_url=ports.make_queue(node_id)))
    try:
        ports.store.commit_node(write)
    except WriteConflict as conflict:
        logger.info("node write lost a race; retrying", extra={"reasons": str(conflict)})
        return None
    _log_written(write)
    node = write.node
    if snapshot is not None:  # the stored creation time stays
        node = replace(node, created_at=snapshot.node.created_at)
    return Outcome(201 if snapshot is None else 200, response_json(node_view(node, unit_ids, now)))


def check_update(
    snapshot: NodeSnapshot | None, request: NodeRequest, change: TopologyChange
) -> None:
    """409 ``stale_topology``, then 409 ``units_unavailable`` for claimed units removed."""
    if snapshot is None:
        return
    if reason := stale_reason(snapshot.node.topology_gen, request.topology_gen, change):
        raise StaleTopology(f"node {snapshot.node.id}: {reason}")
    if refusals := claimed_removals(snapshot, change.removed):
        raise UnitsUnavailable(
            f"node {snapshot.node.id}: units still claimed: "
            + ", ".join(unit_id for unit_id, _ in refusals),
            [FieldProblem("units", f"{unit_id}: {why}") for unit_id, why in refusals],
        )


def _unchanged(snapshot: NodeSnapshot, request: NodeRequest, change: TopologyChange) -> bool:
    """A repeat of what is stored (queue included) writes nothing: PUT is idempotent."""
    node = snapshot.node
    return (
        change.none
        and node.topology_gen == request.topology_gen
        and node.owner_org_id == request.owner_org_id
        and node.queue_url is not None
    )


def node_write(
    caller: Caller,
    node_id: str,
    snapshot: NodeSnapshot | None,
    request: NodeRequest,
    change: TopologyChange,
    queue_url: str | None,
    now: datetime,
) -> NodeWrite:
    """The decision as one conditional write: the node with each unit's generation of last
    change, its new and changed units, and the unit items it no longer has."""
    read = snapshot.node.version if snapshot else None
    node = registered_node(
        node_id,
        request.owner_org_id,
        request.topology_gen,
        queue_url,
        (read or 0) + 1,
        now,
        unit_generations(snapshot, change, request.topology_gen),
    )
    reviewed = to_review(snapshot.reservations, snapshot.node, node, now) if snapshot else []
    return NodeWrite(
        write_id=str(uuid.uuid4()),
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
    """Changed units keep their claim; an added unit replaces an item an earlier update
    left (conditioned on its version as read), or is new."""
    left = {u.id: u.version for u in snapshot.unlisted_units} if snapshot else {}
    changed = [
        UnitPut(replace(new, claimed_by=old.claimed_by, version=old.version + 1), old.version)
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


def _log_written(write: NodeWrite) -> None:
    logger.info(
        "node written",
        extra={
            "nodeId": write.node.id,
            "topologyGen": write.node.topology_gen,
            "registered": write.node_read is None,
            "unitsPut": len(write.units),
            "unitsRemoved": [u.id for u in write.removed],
            "unitsChanged": list(write.changed_unit_ids),
            "reservationsReviewed": write.reviewed,
            "callerOrgId": write.caller_org_id,
            "callerKeyId": write.caller_key_id,
        },
    )
