"""``POST /v1/nodes/{nodeId}/reservations/{id}/reclaim``: return units, terminate spot work.

Read the node (one strongly consistent Query), decide (rules.reclaim_plan), write it all in
one conditional transaction — with the Idempotency-Key's record when there is one — and
retry with jittered backoff when a concurrent writer got there first. Then send one message
per new termination. The workload item is the outbox: a termination that could not be sent
is still open on it, and the sweeper delivers it.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable
from datetime import datetime

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from reservations.dal import queues
from reservations.dal.items import format_time
from reservations.dal.reclaim import Termination
from reservations.dal.reclaim import reclaim_transaction as build_transaction
from reservations.dal.transactions import WriteConflict, commit
from reservations.logic import idempotency
from reservations.models.api import ReclaimResponse, ReservationView, response_json
from reservations.models.domain import Caller, NodeSnapshot, Reservation, ReservationStatus
from reservations.models.errors import (
    ApiError,
    Conflict,
    FieldProblem,
    NotFound,
    ReservationNotActive,
    UnitsNotInReservation,
)
from reservations.models.idempotency import IdempotentRequest, Outcome
from reservations.models.messages import SpotTermination
from reservations.models.requests import RawBody, ReclaimRequest, parse_reclaim_request
from reservations.rules.access import CAPACITY, may_manage_capacity
from reservations.rules.ids import is_resource_id
from reservations.rules.reclaim_plan import ReclaimPlan, plan_reclaim, units_outside
from reservations.rules.status import effective_status, in_term

logger = Logger()
metrics = Metrics()

MAX_ATTEMPTS = 5
_BACKOFF_BASE = 0.025
_BACKOFF_CAP = 0.4

NodeLoader = Callable[[str], NodeSnapshot | None]
Clock = Callable[[], datetime]


def reclaim(
    caller: Caller,
    node_id: str,
    reservation_id: str,
    body: RawBody,
    idempotency_key: str | None,
    load_node: NodeLoader,
    clock: Clock,
) -> Outcome:
    """The answer to a reclaim (or its dry run): 200 with its body, a replay, or an ApiError."""
    if not (is_resource_id(node_id) and is_resource_id(reservation_id) and caller.has(CAPACITY)):
        raise NotFound()
    request = parse_reclaim_request(body)
    keyed = None
    if not request.dry_run:  # a dry run changes nothing: the header is neither kept nor checked
        path = f"/v1/nodes/{node_id}/reservations/{reservation_id}/reclaim"
        document = request.model_dump(mode="json", by_alias=True)
        keyed = idempotency.keyed(caller, idempotency_key, "POST", path, document)
    for attempt in range(MAX_ATTEMPTS):
        outcome = _attempt(caller, node_id, reservation_id, request, keyed, load_node, clock())
        if outcome is not None:
            return outcome
        metrics.add_metric(name="ReclaimConflictsRetried", unit=MetricUnit.Count, value=1)
        time.sleep(random.uniform(0, min(_BACKOFF_CAP, _BACKOFF_BASE * 2**attempt)))  # noqa: S311
    metrics.add_metric(name="ReclaimConflicts", unit=MetricUnit.Count, value=1)
    raise Conflict(
        f"reservation {reservation_id} kept changing while reclaiming; retry the request"
    )


def _attempt(
    caller: Caller,
    node_id: str,
    reservation_id: str,
    request: ReclaimRequest,
    keyed: IdempotentRequest | None,
    load_node: NodeLoader,
    now: datetime,
) -> Outcome | None:
    """Read, decide, write once; None when a concurrent writer won and it must run again."""
    snapshot = load_node(node_id)
    if snapshot is None:
        raise NotFound()
    reservation = _authorized_reservation(caller, snapshot, reservation_id)
    try:
        _check_reclaimable(reservation, request.unit_ids, now)
    except ApiError as refusal:
        return idempotency.refuse(keyed, refusal, now)
    plan = plan_reclaim(snapshot, reservation, request.unit_ids)
    if request.dry_run:
        return Outcome(200, response_json(_response(reservation, now, would=plan)))
    return _commit(caller, snapshot, plan, request, keyed, now)


def _commit(
    caller: Caller,
    snapshot: NodeSnapshot,
    plan: ReclaimPlan,
    request: ReclaimRequest,
    keyed: IdempotentRequest | None,
    now: datetime,
) -> Outcome | None:
    terminations = [Termination(str(uuid.uuid4()), w.id) for w in plan.to_terminate]
    reclaim_id = str(uuid.uuid4())
    outcome = Outcome(200, response_json(_response(plan.reservation, now, done=plan)))
    actions = build_transaction(plan, terminations, caller, request.reason, reclaim_id, now)
    record_at = len(actions)
    try:
        commit(actions + idempotency.record_actions(keyed, outcome, now), token=reclaim_id)
    except WriteConflict as conflict:
        replayed = idempotency.answer_from_conflict(keyed, conflict, record_at, now)
        if replayed is None:
            logger.info("reclaim lost a race; retrying", extra={"reasons": str(conflict)})
        return replayed
    logger.info(
        "reclaim committed",
        extra={
            "nodeId": snapshot.node.id,
            "reservationId": plan.reservation.id,
            "callerOrgId": caller.org_id,
            "callerKeyId": caller.key_id,
            "units": list(plan.unit_ids),
            "terminated": plan.terminated_ids,
            "skipped": plan.skipped_ids,
        },
    )
    _queue(snapshot, plan, terminations, request.reason, now)
    _count(plan)
    return outcome


def _authorized_reservation(
    caller: Caller, snapshot: NodeSnapshot, reservation_id: str
) -> Reservation:
    """The reservation, or the same 404 as an unknown node for unknown or not allowed."""
    reservation = next((r for r in snapshot.reservations if r.id == reservation_id), None)
    if reservation is None or not may_manage_capacity(caller, snapshot, reservation):
        raise NotFound()
    return reservation


def _check_reclaimable(reservation: Reservation, unit_ids: list[str], now: datetime) -> None:
    status = effective_status(reservation, now)
    if status is not ReservationStatus.ACTIVE:
        raise ReservationNotActive(f"reservation {reservation.id} is {status.value}")
    if not in_term(reservation, now):
        raise ReservationNotActive(
            f"reservation {reservation.id} is active but its term has not started"
        )
    if outside := units_outside(reservation, unit_ids):
        raise UnitsNotInReservation(
            f"units not in reservation {reservation.id}: {', '.join(outside)}",
            [FieldProblem("unitIds", f"{unit_id} is not reserved") for unit_id in outside],
        )


def _queue(
    snapshot: NodeSnapshot,
    plan: ReclaimPlan,
    terminations: list[Termination],
    reason: str | None,
    now: datetime,
) -> None:
    """Send the committed terminations; what cannot be sent waits for the sweeper."""
    if not terminations:
        return
    workloads = {w.id: w for w in plan.to_terminate}
    messages = [
        SpotTermination(
            termination_id=t.termination_id,
            node_id=snapshot.node.id,
            workload_id=t.workload_id,
            workload_kind=workloads[t.workload_id].kind,
            unit_ids=list(workloads[t.workload_id].unit_ids),
            reservation_id=plan.reservation.id,
            reason=reason,
            requested_at=now,
        )
        for t in terminations
    ]
    queue_url = snapshot.node.queue_url
    sent = queues.send_terminations(queue_url, messages) if queue_url else set()
    if unsent := len(terminations) - len(sent):
        logger.error(
            "terminations committed but not sent; the sweeper will deliver them",
            extra={"unsent": unsent, "nodeId": snapshot.node.id},
        )
        metrics.add_metric(name="TerminationsUnqueued", unit=MetricUnit.Count, value=unsent)


def _count(plan: ReclaimPlan) -> None:
    metrics.add_metric(name="Reclaims", unit=MetricUnit.Count, value=1)
    metrics.add_metric(name="UnitsReclaimed", unit=MetricUnit.Count, value=len(plan.unit_ids))
    metrics.add_metric(
        name="WorkloadsTerminated", unit=MetricUnit.Count, value=len(plan.to_terminate)
    )
    metrics.add_metric(name="WorkloadsSkipped", unit=MetricUnit.Count, value=len(plan.skipped))


def _response(
    reservation: Reservation,
    now: datetime,
    *,
    done: ReclaimPlan | None = None,
    would: ReclaimPlan | None = None,
) -> ReclaimResponse:
    released = reservation.released_unit_ids
    updated_at = reservation.updated_at
    if done is not None and done.releases_change:
        released, updated_at = done.released_after, now
    view = reservation_view(reservation, now, released, updated_at)
    return ReclaimResponse(
        **view.model_dump(),
        terminated=done.terminated_ids if done else None,
        skipped=done.skipped_ids if done else None,
        would_terminate=would.terminated_ids if would else None,
        would_skip=would.skipped_ids if would else None,
    )


def reservation_view(
    reservation: Reservation,
    now: datetime,
    released: tuple[str, ...],
    updated_at: datetime,
) -> ReservationView:
    return ReservationView(
        id=reservation.id,
        node_id=reservation.node_id,
        status=effective_status(reservation, now).value,
        starts_at=format_time(reservation.starts_at),
        ends_at=format_time(reservation.ends_at) if reservation.ends_at else None,
        allowed_org_ids=sorted(reservation.allowed_org_ids),
        managing_org_ids=sorted(reservation.managing_org_ids),
        reserved_unit_ids=sorted(reservation.reserved_unit_ids),
        released_unit_ids=sorted(released),
        contract_ref=reservation.contract_ref,
        reason=reservation.reason,
        topology_gen=reservation.topology_gen,
        created_at=format_time(reservation.created_at),
        updated_at=format_time(updated_at),
    )
