"""The platform scheduler's calls: ``POST /v1/nodes/{nodeId}/workloads`` places a workload,
``DELETE /v1/nodes/{nodeId}/workloads/{workloadId}`` ends one that stopped on its own.

Each reads the node (one strongly consistent Query), decides (rules.placement,
rules.terminations), and writes one conditional transaction — with the Idempotency-Key's
record when there is one — retried when a concurrent writer got there first. A placement
conditions on the node, the units and the reservations governing them, as a reclaim
conditions on the units and its reservation: of a placement and a reclaim deciding from
the same snapshot, one fails and decides again.
"""

from __future__ import annotations

from datetime import datetime

from aws_lambda_powertools.metrics import MetricUnit

from reservations.logic import idempotency
from reservations.logic.ports import WorkloadPorts
from reservations.logic.retries import retried
from reservations.logic.views import workload_view
from reservations.models.api import response_json
from reservations.models.domain import (
    Caller,
    NodeSnapshot,
    Tier,
    Workload,
    WorkloadKind,
    WorkloadState,
)
from reservations.models.errors import (
    ApiError,
    FieldProblem,
    NotFound,
    UnitsNotSellable,
    UnitsUnavailable,
    WorkloadExists,
)
from reservations.models.idempotency import IdempotentRequest, Outcome
from reservations.models.ids import is_resource_id, is_workload_id
from reservations.models.requests import PlaceWorkloadRequest, RawBody, parse_place_request
from reservations.models.writes import ItemVersion, PlacementWrite, WorkloadEnd, WriteConflict
from reservations.observability import logger, metrics
from reservations.rules.access import may_place_workloads
from reservations.rules.placement import (
    UnitRefusal,
    not_sellable,
    reservations_read,
    unavailable,
)
from reservations.rules.terminations import freed_units


def place_workload(
    caller: Caller,
    node_id: str,
    body: RawBody,
    idempotency_key: str | None,
    ports: WorkloadPorts,
) -> Outcome:
    """201 with the workload, a replay, or an ApiError (409 before 422, as everywhere)."""
    if not (is_resource_id(node_id) and may_place_workloads(caller)):
        raise NotFound()
    request = parse_place_request(body)
    document = request.model_dump(mode="json", by_alias=True)
    path = f"/v1/nodes/{node_id}/workloads"
    keyed = idempotency.keyed(caller, idempotency_key, "POST", path, document)
    return retried(
        lambda: _place_once(caller, node_id, request, keyed, ports),
        ports.sleep,
        "Placement",
        f"node {node_id} kept changing while placing {request.id}",
    )


def _place_once(
    caller: Caller,
    node_id: str,
    request: PlaceWorkloadRequest,
    keyed: IdempotentRequest | None,
    ports: WorkloadPorts,
) -> Outcome | None:
    """Read, decide, write once; None when a concurrent writer won and it must run again."""
    now = ports.clock()
    snapshot = ports.store.load_node(node_id)
    if snapshot is None:
        raise NotFound()
    try:
        check_placeable(snapshot, request, now)
    except ApiError as refusal:
        return idempotency.refuse(keyed, refusal, now, ports.store.keep_answer)
    write = placement_write(caller, snapshot, request, ports.new_id(), now)
    outcome = Outcome(201, response_json(workload_view(node_id, write.workload, now)))
    try:
        ports.store.commit_placement(write, idempotency.answer_record(keyed, outcome, now))
    except WriteConflict as conflict:
        replayed = idempotency.answer_from_conflict(keyed, conflict, now)
        if replayed is None:
            logger.info("placement lost a race; retrying", extra={"reasons": str(conflict)})
        return replayed
    _log("workload placed", caller, node_id, write.workload)
    metrics.add_metric(name="WorkloadsPlaced", unit=MetricUnit.Count, value=1)
    return outcome


def check_placeable(snapshot: NodeSnapshot, request: PlaceWorkloadRequest, now: datetime) -> None:
    """409 ``workload_exists``, then 409 ``units_unavailable``, then 422 ``units_not_sellable``
    (the fleet loader asks it too, of each running workload of a file)."""
    if any(w.id == request.id for w in snapshot.workloads):
        raise WorkloadExists(f"workload {request.id} is already on node {snapshot.node.id}")
    tier = Tier(request.tier)
    if refused := unavailable(snapshot, request.unit_ids, request.org_id, tier, now):
        raise UnitsUnavailable(
            f"units not available to {request.org_id} at tier {tier.value}: {_ids(refused)}",
            _problems(request.unit_ids, refused),
        )
    if refused := not_sellable(request.unit_ids, snapshot.units):
        raise UnitsNotSellable(
            f"units not sellable on node {snapshot.node.id}: {_ids(refused)}",
            _problems(request.unit_ids, refused),
        )


def placement_write(
    caller: Caller,
    snapshot: NodeSnapshot,
    request: PlaceWorkloadRequest,
    write_id: str,
    now: datetime,
) -> PlacementWrite:
    """The decision as one conditional write, on the versions of everything it read."""
    named = set(request.unit_ids)
    return PlacementWrite(
        write_id=write_id,
        node=ItemVersion(snapshot.node.id, snapshot.node.version),
        workload=placed_workload(request, now),
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


def end_workload(
    caller: Caller,
    node_id: str,
    workload_id: str,
    idempotency_key: str | None,
    ports: WorkloadPorts,
) -> Outcome:
    """204, a replay, or the one 404 for an unknown node or workload."""
    if not (is_resource_id(node_id) and is_workload_id(workload_id)):
        raise NotFound()
    if not may_place_workloads(caller):
        raise NotFound()
    path = f"/v1/nodes/{node_id}/workloads/{workload_id}"
    keyed = idempotency.keyed(caller, idempotency_key, "DELETE", path, None)
    return retried(
        lambda: _end_once(caller, node_id, workload_id, keyed, ports),
        ports.sleep,
        "WorkloadEnd",
        f"workload {workload_id} kept changing while ending it",
    )


def _end_once(
    caller: Caller,
    node_id: str,
    workload_id: str,
    keyed: IdempotentRequest | None,
    ports: WorkloadPorts,
) -> Outcome | None:
    now = ports.clock()
    snapshot = ports.store.load_node(node_id)
    workload = _live_workload(snapshot, workload_id)
    if snapshot is None or workload is None:
        return _replay_of_an_end(keyed, ports, now)
    end = WorkloadEnd(
        write_id=ports.new_id(),
        node_id=node_id,
        workload=workload,
        freed_units=tuple(
            ItemVersion(u.id, u.version) for u in freed_units(workload, snapshot.units)
        ),
        caller_org_id=caller.org_id,
        caller_key_id=caller.key_id,
        at=now,
    )
    outcome = Outcome(204, "")
    try:
        ports.store.commit_workload_end(end, idempotency.answer_record(keyed, outcome, now))
    except WriteConflict as conflict:
        return idempotency.answer_from_conflict(keyed, conflict, now)
    _log("workload ended", caller, node_id, workload)
    metrics.add_metric(name="WorkloadsEnded", unit=MetricUnit.Count, value=1)
    return outcome


def _live_workload(snapshot: NodeSnapshot | None, workload_id: str) -> Workload | None:
    if snapshot is None:
        return None
    return next((w for w in snapshot.workloads if w.id == workload_id), None)


def _replay_of_an_end(
    keyed: IdempotentRequest | None, ports: WorkloadPorts, now: datetime
) -> Outcome:
    """The first answer when this key already ended the workload (which is why it is gone);
    otherwise the one 404. Only then is the record read: one GetItem, on this path alone."""
    replayed = idempotency.first_answer(keyed, ports.store.stored_answer, now)
    if replayed is None:
        raise NotFound()
    return replayed


def _ids(refused: list[UnitRefusal]) -> str:
    return ", ".join(r.unit_id for r in refused)


def _problems(unit_ids: list[str], refused: list[UnitRefusal]) -> list[FieldProblem]:
    """One detail per refused unit, named by its place in ``unitIds``."""
    index = {unit_id: i for i, unit_id in enumerate(unit_ids)}
    return [
        FieldProblem(f"unitIds[{index[r.unit_id]}]", f"{r.unit_id}: {r.reason}") for r in refused
    ]


def _log(message: str, caller: Caller, node_id: str, workload: Workload) -> None:
    logger.info(
        message,
        extra={
            "nodeId": node_id,
            "workloadId": workload.id,
            "state": workload.state.value,
            "tier": workload.tier.value,
            "units": list(workload.unit_ids),
            "callerOrgId": caller.org_id,
            "callerKeyId": caller.key_id,
        },
    )
