"""``POST /v1/nodes/{nodeId}/reservations/{id}/reclaim``: return units, terminate spot work.

Read the node (one strongly consistent Query), decide (rules.reclaim_plan), write it all in
one conditional transaction — with the Idempotency-Key's record when there is one — and
retry with jittered backoff when a concurrent writer got there first. Then send one message
per new termination. The workload item is the outbox: a termination that could not be sent
is still open on it, and the sweeper delivers it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime

from aws_lambda_powertools.metrics import MetricUnit

from reservations.logic import idempotency, outbox
from reservations.logic.ports import ReclaimPorts
from reservations.logic.reads import checked_reads
from reservations.logic.retries import MAX_ATTEMPTS as MAX_ATTEMPTS
from reservations.logic.retries import retried
from reservations.logic.views import reclaim_response
from reservations.models.api import response_json
from reservations.models.domain import Caller, Node, NodeSnapshot, Reservation
from reservations.models.errors import NotFound
from reservations.models.idempotency import IdempotentRequest, Outcome
from reservations.models.ids import is_resource_id
from reservations.models.requests import CapacityRequest, RawBody, parse_capacity_request
from reservations.models.writes import (
    ItemVersion,
    NewTermination,
    ReclaimAudit,
    ReclaimWrite,
    TopologyRead,
    WriteConflict,
)
from reservations.observability import logger, metrics
from reservations.rules.access import CAPACITY, may_manage_capacity, may_manage_capacity_of
from reservations.rules.capacity import capacity_refusal
from reservations.rules.reclaim_plan import ReclaimPlan, plan_reclaim


def reclaim(
    caller: Caller,
    node_id: str,
    reservation_id: str,
    body: RawBody,
    idempotency_key: str | None,
    ports: ReclaimPorts,
) -> Outcome:
    """The answer to a reclaim (or its dry run): 200 with its body, a replay, or an ApiError."""
    if not (is_resource_id(node_id) and is_resource_id(reservation_id) and caller.has(CAPACITY)):
        raise NotFound()
    read_node = checked_reads(
        caller,
        node_id,
        ports.store,
        lambda node: may_manage_capacity_of(caller, node, reservation_id),
    )
    request = parse_capacity_request(body)
    keyed = None
    if not request.dry_run:  # a dry run changes nothing: the header is neither kept nor checked
        path = f"/v1/nodes/{node_id}/reservations/{reservation_id}/reclaim"
        document = request.model_dump(mode="json", by_alias=True)
        keyed = idempotency.keyed(caller, idempotency_key, "POST", path, document)
    return retried(
        lambda: _attempt(caller, node_id, reservation_id, request, keyed, read_node, ports),
        ports.sleep,
        "Reclaim",
        f"reservation {reservation_id} kept changing while reclaiming",
    )


def _attempt(
    caller: Caller,
    node_id: str,
    reservation_id: str,
    request: CapacityRequest,
    keyed: IdempotentRequest | None,
    read_node: Callable[[], NodeSnapshot | None],
    ports: ReclaimPorts,
) -> Outcome | None:
    """Read, decide, write once; None when a concurrent writer won and it must run again."""
    now = ports.clock()
    snapshot = read_node()
    if snapshot is None:
        raise NotFound()
    reservation = _authorized_reservation(caller, snapshot, reservation_id)
    if refusal := capacity_refusal(reservation, snapshot.node, request.unit_ids, now):
        return idempotency.refuse(keyed, refusal, now, ports.store.keep_answer)
    plan = plan_reclaim(snapshot, reservation, request.unit_ids)
    if request.dry_run:
        view = reclaim_response(reservation, snapshot.node, now, would=plan)
        return Outcome(200, response_json(view))
    return _commit(caller, snapshot, plan, request, keyed, ports, now)


def _commit(
    caller: Caller,
    snapshot: NodeSnapshot,
    plan: ReclaimPlan,
    request: CapacityRequest,
    keyed: IdempotentRequest | None,
    ports: ReclaimPorts,
    now: datetime,
) -> Outcome | None:
    write = reclaim_write(caller, snapshot.node, plan, request.reason, now)
    view = reclaim_response(plan.reservation, snapshot.node, now, done=plan)
    outcome = Outcome(200, response_json(view))
    try:
        ports.store.commit_reclaim(write, idempotency.answer_record(keyed, outcome, now))
    except WriteConflict as conflict:
        replayed = idempotency.answer_from_conflict(keyed, conflict, now)
        if replayed is None:
            logger.info("reclaim lost a race; retrying", extra={"reasons": str(conflict)})
        return replayed
    _log_committed(caller, plan)
    outbox.send_committed(
        snapshot.node, outbox.committed(write, plan.to_terminate), ports.send, now
    )
    _count(plan)
    return outcome


def reclaim_write(
    caller: Caller, node: Node, plan: ReclaimPlan, reason: str | None, now: datetime
) -> ReclaimWrite:
    """The plan as one conditional write (on the node's topology as read too): new
    termination ids, a new reclaim id."""
    reservation = plan.reservation
    return ReclaimWrite(
        reclaim_id=str(uuid.uuid4()),
        node_id=reservation.node_id,
        reservation=ItemVersion(reservation.id, reservation.version),
        topology=TopologyRead(node.id, node.topology_gen),
        released_after=plan.released_after if plan.releases_change else None,
        units=tuple(ItemVersion(u.id, u.version) for u in plan.units),
        terminations=tuple(
            NewTermination(ItemVersion(w.id, w.version), str(uuid.uuid4()))
            for w in plan.to_terminate
        ),
        unchanged_workloads=tuple(
            ItemVersion(w.id, w.version) for w in (*plan.already_terminating, *plan.skipped)
        ),
        reason=reason,
        audit=ReclaimAudit(
            caller_org_id=caller.org_id,
            caller_key_id=caller.key_id,
            unit_ids=plan.unit_ids,
            released_before=reservation.released_unit_ids,
            terminated=tuple(plan.terminated_ids),
            skipped=tuple(plan.skipped_ids),
        ),
        at=now,
    )


def _authorized_reservation(
    caller: Caller, snapshot: NodeSnapshot, reservation_id: str
) -> Reservation:
    """The reservation, or the same 404 as an unknown node for unknown or not allowed."""
    reservation = next((r for r in snapshot.reservations if r.id == reservation_id), None)
    if reservation is None or not may_manage_capacity(caller, snapshot, reservation):
        raise NotFound()
    return reservation


def _log_committed(caller: Caller, plan: ReclaimPlan) -> None:
    logger.info(
        "reclaim committed",
        extra={
            "nodeId": plan.reservation.node_id,
            "reservationId": plan.reservation.id,
            "callerOrgId": caller.org_id,
            "callerKeyId": caller.key_id,
            "units": list(plan.unit_ids),
            "terminated": plan.terminated_ids,
            "skipped": plan.skipped_ids,
        },
    )


def _count(plan: ReclaimPlan) -> None:
    metrics.add_metric(name="Reclaims", unit=MetricUnit.Count, value=1)
    metrics.add_metric(name="UnitsReclaimed", unit=MetricUnit.Count, value=len(plan.unit_ids))
    metrics.add_metric(
        name="WorkloadsTerminated", unit=MetricUnit.Count, value=len(plan.to_terminate)
    )
    metrics.add_metric(name="WorkloadsSkipped", unit=MetricUnit.Count, value=len(plan.skipped))
