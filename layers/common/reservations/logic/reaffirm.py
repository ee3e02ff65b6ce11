"""``POST /v1/nodes/{nodeId}/reservations/{id}/reaffirm``: a reservation that a topology
change put under review is confirmed on the node's current topology.

One strongly consistent Query, the rules (only from ``needs-review``; every reserved unit
still on the node and reservable), then one conditional transaction on the reservation and
the node item (with the Idempotency-Key's record), retried on a lost race.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import datetime

from reservations.logic import idempotency
from reservations.logic.ports import ReaffirmPorts
from reservations.logic.retries import retried
from reservations.logic.views import reservation_view
from reservations.models.api import response_json
from reservations.models.domain import Caller, NodeSnapshot, Reservation, ReservationStatus
from reservations.models.errors import (
    ApiError,
    FieldProblem,
    NotFound,
    ReservationNotInReview,
    UnitsNotReservable,
)
from reservations.models.idempotency import IdempotentRequest, Outcome
from reservations.models.ids import is_resource_id
from reservations.models.node_requests import ReaffirmRequest, parse_reaffirm_request
from reservations.models.requests import RawBody
from reservations.models.writes import ItemVersion, ReaffirmWrite, WriteConflict
from reservations.observability import logger
from reservations.rules.access import may_write_nodes
from reservations.rules.reservations import initial_status, not_reservable
from reservations.rules.status import effective_status


def reaffirm(
    caller: Caller,
    node_id: str,
    reservation_id: str,
    body: RawBody,
    idempotency_key: str | None,
    ports: ReaffirmPorts,
) -> Outcome:
    """200 with the reservation out of review, a replay, or an ApiError."""
    if not (is_resource_id(node_id) and is_resource_id(reservation_id) and may_write_nodes(caller)):
        raise NotFound()
    request = parse_reaffirm_request(body)
    path = f"/v1/nodes/{node_id}/reservations/{reservation_id}/reaffirm"
    document = request.model_dump(mode="json", by_alias=True)
    keyed = idempotency.keyed(caller, idempotency_key, "POST", path, document)
    return retried(
        lambda: _attempt(caller, node_id, reservation_id, request, keyed, ports),
        ports.sleep,
        "Reaffirm",
        f"reservation {reservation_id} kept changing while it was re-affirmed",
    )


def _attempt(
    caller: Caller,
    node_id: str,
    reservation_id: str,
    request: ReaffirmRequest,
    keyed: IdempotentRequest | None,
    ports: ReaffirmPorts,
) -> Outcome | None:
    """Read, decide, write once; None when a concurrent writer won and it must run again."""
    now = ports.clock()
    snapshot = ports.store.load_node(node_id)
    reservation = (
        next((r for r in snapshot.reservations if r.id == reservation_id), None)
        if snapshot
        else None
    )
    if snapshot is None or reservation is None:
        raise NotFound()
    try:
        check_reaffirmable(snapshot, reservation, now)
    except ApiError as refusal:
        return idempotency.refuse(keyed, refusal, now, ports.store.keep_answer)
    write = reaffirm_write(caller, snapshot, reservation, request.reason, now)
    affirmed = replace(
        reservation,
        status=write.status,
        topology_gen=write.topology_gen,
        released_unit_ids=(),
        updated_at=now,
    )
    view = reservation_view(affirmed, snapshot.node, now, (), now)
    outcome = Outcome(200, response_json(view))
    try:
        ports.store.commit_reaffirm(write, idempotency.answer_record(keyed, outcome, now))
    except WriteConflict as conflict:
        return idempotency.answer_from_conflict(keyed, conflict, now)
    logger.info(
        "reservation re-affirmed",
        extra={"nodeId": node_id, "reservationId": reservation_id, "callerOrgId": caller.org_id},
    )
    return outcome


def check_reaffirmable(snapshot: NodeSnapshot, reservation: Reservation, now: datetime) -> None:
    """409 unless it is under review now (stored or derived; an ended review is expired);
    422 naming each reserved unit gone or not reservable."""
    status = effective_status(reservation, snapshot.node, now)
    if status is not ReservationStatus.NEEDS_REVIEW:
        raise ReservationNotInReview(
            f"reservation {reservation.id} is {status.value}, not needs-review"
        )
    reserved = sorted(reservation.reserved_unit_ids)  # as the reservation object shows them
    if refusals := not_reservable(snapshot, reserved):
        raise UnitsNotReservable(
            f"reservation {reservation.id} holds units that are not reservable: "
            + ", ".join(unit_id for unit_id, _ in refusals),
            [
                FieldProblem(f"reservedUnitIds[{reserved.index(unit_id)}]", f"{unit_id}: {why}")
                for unit_id, why in refusals
            ],
        )


def reaffirm_write(
    caller: Caller,
    snapshot: NodeSnapshot,
    reservation: Reservation,
    reason: str | None,
    now: datetime,
) -> ReaffirmWrite:
    """The reservation on the node's generation, pending or active by the clock."""
    return ReaffirmWrite(
        write_id=str(uuid.uuid4()),
        node_id=snapshot.node.id,
        reservation=ItemVersion(reservation.id, reservation.version),
        node=ItemVersion(snapshot.node.id, snapshot.node.version),
        status=initial_status(reservation.starts_at, now),
        topology_gen=snapshot.node.topology_gen,
        reason=reason,
        caller_org_id=caller.org_id,
        caller_key_id=caller.key_id,
        at=now,
    )
