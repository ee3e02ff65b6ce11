"""``POST /v1/nodes/{nodeId}/reservations/{id}/reclaim``: return units, terminate spot work.

Read the node (one strongly consistent Query), decide (rules.reclaim_plan), write it all in
one conditional transaction, retry with jittered backoff when a concurrent writer got there
first, then queue one message per new termination and mark them queued. A termination that
could not be queued stays recorded on its workload (``queuedAt`` absent) for the sweeper.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable
from datetime import datetime
from functools import cache
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyValidationError,
)
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import BotoCoreError, ClientError

from reservations.config import settings
from reservations.dal import clients, queues
from reservations.dal.items import format_time
from reservations.dal.reclaim import Termination, WriteConflict, commit, mark_queued
from reservations.dal.reclaim import reclaim_transaction as build_transaction
from reservations.models.api import ReclaimResponse, ReservationView
from reservations.models.domain import Caller, NodeSnapshot, Reservation, ReservationStatus
from reservations.models.errors import (
    Conflict,
    FieldProblem,
    IdempotencyInProgress,
    IdempotencyKeyReused,
    InvalidRequest,
    NotFound,
    ReservationNotActive,
    UnitsNotInReservation,
)
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
IDEMPOTENCY_TTL_SECONDS = 24 * 3600

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
) -> dict[str, Any]:
    """The response body of a reclaim (or its dry run), or an ApiError."""
    if not (is_resource_id(node_id) and is_resource_id(reservation_id) and caller.has(CAPACITY)):
        raise NotFound()
    request = parse_reclaim_request(body)
    if idempotency_key is None:
        return _reclaim(caller, node_id, reservation_id, request, load_node, clock)
    _check_idempotency_key(idempotency_key)
    try:
        result: dict[str, Any] = _idempotent()(
            call={
                # Scoped to the key that called, so two tenants' keys never meet.
                "key": f"{caller.key_id}:{idempotency_key}",
                "request": {
                    "nodeId": node_id,
                    "reservationId": reservation_id,
                    "body": request.model_dump(mode="json", by_alias=True),
                },
            },
            caller=caller,
            request=request,
            load_node=load_node,
            clock=clock,
        )
    except IdempotencyValidationError as error:
        raise IdempotencyKeyReused(
            "Idempotency-Key was already used with a different request"
        ) from error
    except IdempotencyAlreadyInProgressError as error:
        raise IdempotencyInProgress(
            "a request with this Idempotency-Key is still being processed"
        ) from error
    return result


def register_lambda_context(context: LambdaContext) -> None:
    """Lets an in-progress idempotency record expire with the invocation that made it."""
    _idempotency_config().register_lambda_context(context)


def _check_idempotency_key(value: str) -> None:
    if not 1 <= len(value) <= 255 or not all(" " <= ch <= "~" for ch in value):
        raise InvalidRequest(
            "Idempotency-Key must be 1-255 printable characters",
            [FieldProblem("Idempotency-Key", "must be 1-255 printable ASCII characters")],
        )


@cache
def _idempotency_config() -> IdempotencyConfig:
    return IdempotencyConfig(
        event_key_jmespath="key",
        payload_validation_jmespath="request",
        expires_after_seconds=IDEMPOTENCY_TTL_SECONDS,
        raise_on_no_idempotency_key=True,
    )


@cache
def _idempotent() -> Callable[..., dict[str, Any]]:
    persistence = DynamoDBPersistenceLayer(
        table_name=settings().idempotency_table_name, boto3_client=clients.dynamodb()
    )

    @idempotent_function(
        data_keyword_argument="call",
        config=_idempotency_config(),
        persistence_store=persistence,
    )
    def reclaim_once(
        call: dict[str, Any],
        caller: Caller,
        request: ReclaimRequest,
        load_node: NodeLoader,
        clock: Clock,
    ) -> dict[str, Any]:
        return _reclaim(
            caller,
            call["request"]["nodeId"],
            call["request"]["reservationId"],
            request,
            load_node,
            clock,
        )

    return reclaim_once


def _reclaim(
    caller: Caller,
    node_id: str,
    reservation_id: str,
    request: ReclaimRequest,
    load_node: NodeLoader,
    clock: Clock,
) -> dict[str, Any]:
    for attempt in range(MAX_ATTEMPTS):
        now = clock()
        snapshot = load_node(node_id)
        if snapshot is None:
            raise NotFound()
        reservation = _authorized_reservation(caller, snapshot, reservation_id)
        _check_reclaimable(reservation, request.unit_ids, now)
        plan = plan_reclaim(snapshot, reservation, request.unit_ids)
        if request.dry_run:
            return _response(reservation, now, would=plan).model_dump(mode="json", by_alias=True)
        terminations = [Termination(str(uuid.uuid4()), w.id) for w in plan.to_terminate]
        reclaim_id = str(uuid.uuid4())
        try:
            commit(
                build_transaction(plan, terminations, caller, request.reason, reclaim_id, now),
                token=reclaim_id,
            )
        except WriteConflict as conflict:
            logger.info(
                "reclaim lost a race; retrying",
                extra={"attempt": attempt + 1, "reasons": str(conflict)},
            )
            metrics.add_metric(name="ReclaimConflictsRetried", unit=MetricUnit.Count, value=1)
            time.sleep(random.uniform(0, min(_BACKOFF_CAP, _BACKOFF_BASE * 2**attempt)))  # noqa: S311
            continue
        logger.info(
            "reclaim committed",
            extra={
                "nodeId": node_id,
                "reservationId": reservation_id,
                "callerOrgId": caller.org_id,
                "callerKeyId": caller.key_id,
                "units": list(plan.unit_ids),
                "terminated": plan.terminated_ids,
                "skipped": plan.skipped_ids,
                "attempt": attempt + 1,
            },
        )
        _queue(snapshot, plan, terminations, request.reason, now)
        _count(plan)
        return _response(reservation, now, done=plan).model_dump(mode="json", by_alias=True)
    metrics.add_metric(name="ReclaimConflicts", unit=MetricUnit.Count, value=1)
    raise Conflict(
        f"reservation {reservation_id} kept changing while reclaiming; retry the request"
    )


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
    unsent = len(terminations) - len(sent)
    if unsent:
        logger.error(
            "terminations committed but not queued; the sweeper will deliver them",
            extra={"unqueued": unsent, "nodeId": snapshot.node.id},
        )
        metrics.add_metric(name="TerminationsUnqueued", unit=MetricUnit.Count, value=unsent)
    try:
        mark_queued(snapshot.node.id, [t for t in terminations if t.termination_id in sent], now)
    except (BotoCoreError, ClientError):  # committed anyway; unmarked means only resent
        logger.exception("could not mark terminations queued")


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
