"""The platform scheduler's calls: ``POST /v1/nodes/{nodeId}/workloads`` places a workload,
``DELETE /v1/nodes/{nodeId}/workloads/{workloadId}`` ends one that stopped on its own.

Each is decided from the node as read (rules.placement, rules.terminations) and written by
the write pipeline in one conditional transaction. A placement conditions on the node, the
units and the reservations governing them, as a reclaim conditions on the units and its
reservation: of a placement and a reclaim deciding from the same snapshot, one fails and
decides again.
"""

from __future__ import annotations

from datetime import datetime

from reservations.kernel.bodies import RawBody
from reservations.kernel.caller import Caller
from reservations.kernel.envelope import StoredEvent
from reservations.kernel.errors import FieldProblem, NotFound
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
from reservations.nodes import (
    NodePorts,
    NodeSnapshot,
    Tier,
    UnitsUnavailable,
    Workload,
    WorkloadState,
    is_workload_id,
    node_partition,
    with_events,
    with_promises,
    workload_view,
)
from reservations.terminations import freed_units
from reservations.workloads.errors import UnitsNotSellable, WorkloadExists
from reservations.workloads.models import PlaceWorkloadRequest, parse_place_request
from reservations.workloads.rules import events as workloads_events
from reservations.workloads.rules.access import may_place_workloads
from reservations.workloads.rules.placement import (
    PlacementRefusal,
    not_sellable,
    reservations_read,
    unavailable,
)
from reservations.workloads.writes import PlacementWrite, WorkloadEnd
from termination_messages import WorkloadKind

# What a placement may be refused with on its node.
PlaceRefusal = WorkloadExists | UnitsUnavailable | UnitsNotSellable


def decide_placement(
    snapshot: NodeSnapshot | None,
    request: Request[PlaceWorkloadRequest],
    caller: Caller,
    now: datetime,
) -> NotFound | PlaceRefusal | Decision[PlacementWrite]:
    """The workload placed, running, and 201 with it (409 before 422, as everywhere)."""
    if snapshot is None:
        return NotFound()
    if refusal := placement_refusal(snapshot, request.body, now):
        return refusal
    write = placement_write(caller, snapshot, request.body, request.new_id(), now)
    view = workload_view(snapshot.node.id, write.workload, now)
    return Decision(write, Outcome(201, response_json(view)))


def placement_refusal(
    snapshot: NodeSnapshot, request: PlaceWorkloadRequest, now: datetime
) -> PlaceRefusal | None:
    """409 ``workload_exists``, then 409 ``units_unavailable``, then 422 ``units_not_sellable``
    (the fleet loader asks it too, of each running workload of a file)."""
    if any(w.id == request.id for w in snapshot.workloads):
        return WorkloadExists(f"workload {request.id} is already on node {snapshot.node.id}")
    tier = Tier(request.tier)
    if refused := unavailable(snapshot, request.unit_ids, request.org_id, tier, now):
        return UnitsUnavailable(
            f"units not available to {request.org_id} at tier {tier.value}: {_ids(refused)}",
            _problems(request.unit_ids, refused),
        )
    if refused := not_sellable(request.unit_ids, snapshot.units):
        return UnitsNotSellable(
            f"units not sellable on node {snapshot.node.id}: {_ids(refused)}",
            _problems(request.unit_ids, refused),
        )
    return None


def placement_write(
    caller: Caller,
    snapshot: NodeSnapshot,
    request: PlaceWorkloadRequest,
    write_id: str,
    now: datetime,
) -> PlacementWrite:
    """The decision as one conditional write, on the versions of everything it read; a
    spot workload's promises fixed from the reservations governing its units now (read with
    the rest: the write conditions on them, so a policy changed meanwhile makes it decide
    again)."""
    named = set(request.unit_ids)
    return PlacementWrite(
        write_id=write_id,
        node=ItemVersion(snapshot.node.id, snapshot.node.version),
        workload=with_promises(placed_workload(request, now), snapshot, now),
        units=tuple(ItemVersion(u.id, u.version) for u in snapshot.units if u.id in named),
        reservations=tuple(
            ItemVersion(r.id, r.version) for r in reservations_read(snapshot, request.unit_ids, now)
        ),
        caller_org_id=caller.org_id,
        caller_key_id=caller.key_id,
        at=now,
    )


def placed_workload(request: PlaceWorkloadRequest, now: datetime) -> Workload:
    """The workload a placement stores: running, its units in id order, placed now."""
    return Workload(
        id=request.id,
        kind=WorkloadKind(request.kind),
        tier=Tier(request.tier),
        org_id=request.org_id,
        unit_ids=tuple(sorted(request.unit_ids)),
        state=WorkloadState.RUNNING,
        created_at=now,
    )


def decide_end(
    snapshot: NodeSnapshot | None, request: Request[None], caller: Caller, now: datetime
) -> NotFound | Decision[WorkloadEnd]:
    """The workload gone from the node, the units it held free, and 204; the one 404 for an
    unknown node or workload (which the pipeline answers from the key's first end, if any)."""
    workload_id = request.route.params["workloadId"]
    workloads = snapshot.workloads if snapshot else ()
    workload = next((w for w in workloads if w.id == workload_id), None)
    if snapshot is None or workload is None:
        return NotFound()
    end = WorkloadEnd(
        write_id=request.new_id(),
        node_id=snapshot.node.id,
        workload=workload,
        freed_units=tuple(
            ItemVersion(u.id, u.version) for u in freed_units(workload, snapshot.units)
        ),
        caller_org_id=caller.org_id,
        caller_key_id=caller.key_id,
        at=now,
    )
    return Decision(end, Outcome(204, ""))


def _ids(refused: list[PlacementRefusal]) -> str:
    return ", ".join(r.unit_id for r in refused)


def _problems(unit_ids: list[str], refused: list[PlacementRefusal]) -> list[FieldProblem]:
    """One detail per refused unit, named by its place in ``unitIds``."""
    index = {unit_id: i for i, unit_id in enumerate(unit_ids)}
    return [
        FieldProblem(f"unitIds[{index[r.unit_id]}]", f"{r.unit_id}: {r.reason}") for r in refused
    ]


def _committed(message: str, write: PlacementWrite | WorkloadEnd) -> Committed:
    workload = write.workload
    context = {
        "workloadId": workload.id,
        "state": workload.state.value,
        "tier": workload.tier.value,
        "units": list(workload.unit_ids),
    }
    counted = "WorkloadsPlaced" if isinstance(write, PlacementWrite) else "WorkloadsEnded"
    return Committed(message, context, {counted: 1})


def placement_events(
    snapshot: NodeSnapshot | None, write: PlacementWrite
) -> tuple[StoredEvent, ...]:
    """``workload.placed``: the workload as placed."""
    assert snapshot is not None  # a placement is only decided on a node it read
    context = by_caller(write, write.node.id, snapshot.node.owner_org_id, write.write_id)
    return (workloads_events.workload_placed(context, write.workload),)


def end_events(snapshot: NodeSnapshot | None, write: WorkloadEnd) -> tuple[StoredEvent, ...]:
    """``workload.ended``: the units it freed, the termination it closed, if any."""
    assert snapshot is not None  # an end is only decided on a node it read
    context = by_caller(write, write.node_id, snapshot.node.owner_org_id, write.write_id)
    freed = (unit.id for unit in write.freed_units)
    return (workloads_events.workload_ended(context, write.workload, freed),)


def _no_body(_raw: RawBody) -> None:
    """An end is named by its path alone: a body, if any, is not read."""


def _placed(write: PlacementWrite) -> Committed:
    return _committed("workload placed", write)


def _ended(write: WorkloadEnd) -> Committed:
    return _committed("workload ended", write)


# The platform scheduler's calls: ``workload.place``, operator keys only; no node's data
# can change it, so it is settled before any read.
SCHEDULER: Access[NodeSnapshot | None] = Access(may_place_workloads)

PLACE: WriteSpec[PlaceWorkloadRequest, NodeSnapshot | None, PlacementWrite, NodePorts] = WriteSpec(
    name="Placement",
    access=SCHEDULER,
    body=Body(parse=parse_place_request),
    decide=decide_placement,
    commit=Commit(
        partition=node_partition, committed=_placed, finish=with_events(placement_events)
    ),
    conflict="node {nodeId} kept changing while placing {body.id}",
)

END: WriteSpec[None, NodeSnapshot | None, WorkloadEnd, NodePorts] = WriteSpec(
    name="WorkloadEnd",
    access=SCHEDULER,
    body=Body(parse=_no_body),
    decide=decide_end,
    commit=Commit(partition=node_partition, committed=_ended, finish=with_events(end_events)),
    conflict="workload {workloadId} kept changing while ending it",
    first_answer_for=(NotFound,),
    path_ids={"workloadId": is_workload_id},
)
