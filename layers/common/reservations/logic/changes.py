"""What release and cancel share: the reservation the caller may act on, the change as one
conditional write with its audit record and kept answer, and the answer itself."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime

from aws_lambda_powertools.metrics import MetricUnit

from reservations.logic import idempotency
from reservations.logic.ports import ChangeStore
from reservations.logic.views import reservation_view
from reservations.models.api import response_json
from reservations.models.changes import ReservationChange
from reservations.models.domain import Caller, Node, NodeSnapshot, Reservation, ReservationStatus
from reservations.models.errors import NotFound
from reservations.models.idempotency import IdempotentRequest, Outcome
from reservations.models.writes import ItemVersion, TopologyRead, WriteConflict
from reservations.observability import logger, metrics
from reservations.rules.status import effective_status


def reservation_in(
    snapshot: NodeSnapshot | None,
    reservation_id: str,
    allowed: Callable[[NodeSnapshot, Reservation], bool],
) -> tuple[Node, Reservation]:
    """The node and the reservation, or the same 404 as an unknown node for unknown or not
    allowed."""
    if snapshot is None:
        raise NotFound()
    reservation = next((r for r in snapshot.reservations if r.id == reservation_id), None)
    if reservation is None or not allowed(snapshot, reservation):
        raise NotFound()
    return snapshot.node, reservation


def change(
    action: str,
    caller: Caller,
    reservation: Reservation,
    node: Node,
    now: datetime,
    *,
    released_after: tuple[str, ...] | None,
    status_after: ReservationStatus | None = None,
    unit_ids: tuple[str, ...] = (),
    reason: str | None = None,
) -> ReservationChange:
    """The decision as one write on the reservation's version and the node's topology (which
    its effective status was read from), with a new change id."""
    return ReservationChange(
        change_id=str(uuid.uuid4()),
        action=action,
        node_id=reservation.node_id,
        reservation=ItemVersion(reservation.id, reservation.version),
        topology=TopologyRead(node.id, node.topology_gen),
        released_after=released_after,
        status_after=status_after,
        reason=reason,
        caller_org_id=caller.org_id,
        caller_key_id=caller.key_id,
        unit_ids=unit_ids,
        released_before=reservation.released_unit_ids,
        status_before=effective_status(reservation, node, now),
        at=now,
    )


def answer(
    reservation: Reservation, node: Node, change: ReservationChange, now: datetime
) -> Outcome:
    """200 with the reservation object as the change leaves it."""
    after = change.applied_to(reservation)
    view = reservation_view(after, node, now, after.released_unit_ids, after.updated_at)
    return Outcome(200, response_json(view))


def commit(
    change: ReservationChange,
    outcome: Outcome,
    keyed: IdempotentRequest | None,
    store: ChangeStore,
) -> Outcome | None:
    """Write it with its kept answer; None when a concurrent writer won (read again)."""
    try:
        store.commit_change(change, idempotency.answer_record(keyed, outcome, change.at))
    except WriteConflict as conflict:
        replayed = idempotency.answer_from_conflict(keyed, conflict, change.at)
        if replayed is None:
            logger.info(f"{change.action} lost a race; retrying", extra={"reasons": str(conflict)})
        return replayed
    logger.info(
        f"{change.action} committed",
        extra={
            "nodeId": change.node_id,
            "reservationId": change.reservation.id,
            "callerOrgId": change.caller_org_id,
            "callerKeyId": change.caller_key_id,
            "units": list(change.unit_ids),
            "changed": change.writes_reservation,
        },
    )
    metrics.add_metric(name=f"Reservation{change.action.title()}s", unit=MetricUnit.Count, value=1)
    return outcome
