"""``POST /v1/nodes/{nodeId}/reservations``: reserve units of a node for an audience.

Read the node (one strongly consistent Query), decide (rules.reservations), and write the
reservation in one conditional transaction on the node item's version (which it bumps, so
two creates on one node serialize) and on every named unit's — with the Idempotency-Key's
record when there is one. A lost race re-reads and decides again: the loser of two
overlapping creates then sees the winner and answers 409 ``units_unavailable``.
"""

from __future__ import annotations

import secrets
import string
from collections.abc import Callable
from datetime import datetime

from aws_lambda_powertools.metrics import MetricUnit

from reservations.logic import idempotency
from reservations.logic.ports import CreatePorts
from reservations.logic.reads import checked_reads
from reservations.logic.retries import retried
from reservations.logic.views import reservation_view
from reservations.models.api import response_json
from reservations.models.domain import Caller, NodeSnapshot, Reservation
from reservations.models.errors import (
    ApiError,
    FieldProblem,
    InvalidRequest,
    NotFound,
    UnitsNotReservable,
    UnitsUnavailable,
)
from reservations.models.idempotency import IdempotentRequest, Outcome
from reservations.models.ids import is_resource_id
from reservations.models.requests import CreateReservationRequest, RawBody, parse_create_request
from reservations.models.writes import ItemVersion, ReservationCreate, WriteConflict
from reservations.observability import logger, metrics
from reservations.rules.access import WRITE, may_write_reservations
from reservations.rules.reservations import (
    Term,
    UnitRefusal,
    initial_status,
    new_term,
    not_reservable,
    unavailable,
)

_ID_ALPHABET = string.ascii_lowercase + string.digits


def new_reservation_id() -> str:
    """``res-`` and 20 random lowercase letters or digits (about 103 bits)."""
    return "res-" + "".join(secrets.choice(_ID_ALPHABET) for _ in range(20))


def create_reservation(
    caller: Caller, node_id: str, body: RawBody, idempotency_key: str | None, ports: CreatePorts
) -> Outcome:
    """201 with the reservation and its Location, a replay, or an ApiError."""
    if not (is_resource_id(node_id) and caller.has(WRITE)):
        raise NotFound()
    read_node = checked_reads(
        caller, node_id, ports.store, lambda node: may_write_reservations(caller, node)
    )
    request = parse_create_request(body)
    document = request.model_dump(mode="json", by_alias=True, exclude_none=True)
    path = f"/v1/nodes/{node_id}/reservations"
    keyed = idempotency.keyed(caller, idempotency_key, "POST", path, document)
    try:
        new_term(*request.term(), ports.clock())  # a bad term is a 400, before the write
    except InvalidRequest:
        # Unless it is the retry of a create that committed: however late, it gets the
        # first answer (exactly once); this is the only path that reads the record.
        replayed = idempotency.first_answer(keyed, ports.store.stored_answer, ports.clock())
        if replayed is None:
            raise
        return replayed
    return retried(
        lambda: _attempt(caller, node_id, request, keyed, read_node, ports),
        ports.sleep,
        "Create",
        f"node {node_id} kept changing while creating the reservation",
    )


def _attempt(
    caller: Caller,
    node_id: str,
    request: CreateReservationRequest,
    keyed: IdempotentRequest | None,
    read_node: Callable[[], NodeSnapshot | None],
    ports: CreatePorts,
) -> Outcome | None:
    """Read, decide, write once; None when a concurrent writer won and it must run again."""
    now = ports.clock()
    snapshot = read_node()
    if snapshot is None or not may_write_reservations(caller, snapshot):
        raise NotFound()
    decided = decide_create(snapshot, request, ports.new_id, now)
    if isinstance(decided, ApiError):
        return idempotency.refuse(keyed, decided, now, ports.store.keep_answer)
    return _commit(caller, snapshot, decided, keyed, ports, now)


def decide_create(
    snapshot: NodeSnapshot,
    request: CreateReservationRequest,
    new_id: Callable[[], str],
    now: datetime,
) -> Reservation | ApiError:
    """What a create decides on this node as read: the reservation to write, or the refusal
    (409 held or claimed, then 422 not reservable). A bad term raises the 400. The fleet
    loader makes a file's reservations with this too, where a create could have made them."""
    term = new_term(*request.term(), now)
    refusal = _refusal(snapshot, request, term, now)
    if refusal is not None:
        return refusal
    return _new_reservation(snapshot, request, term, new_id(), now)


def _refusal(
    snapshot: NodeSnapshot, request: CreateReservationRequest, term: Term, now: datetime
) -> ApiError | None:
    """409 for units held or claimed, then 422 for units not on the node or not reservable."""
    units = request.unit_ids
    if held := unavailable(snapshot, units, term, request.allowed_org_ids, now):
        return UnitsUnavailable(_message("units unavailable", held), _details(units, held))
    if refused := not_reservable(snapshot, units):
        return UnitsNotReservable(
            _message("units not reservable", refused), _details(units, refused)
        )
    return None


def _message(title: str, refusals: list[UnitRefusal]) -> str:
    return f"{title}: " + ", ".join(unit_id for unit_id, _ in refusals)


def _details(unit_ids: list[str], refusals: list[UnitRefusal]) -> list[FieldProblem]:
    """One problem per unit, at its position in the request, with the reason."""
    return [
        FieldProblem(f"unitIds[{unit_ids.index(unit_id)}]", f"{unit_id}: {why}")
        for unit_id, why in refusals
    ]


def _new_reservation(
    snapshot: NodeSnapshot,
    request: CreateReservationRequest,
    term: Term,
    reservation_id: str,
    now: datetime,
) -> Reservation:
    stamp = now.replace(microsecond=0)
    return Reservation(
        id=reservation_id,
        node_id=snapshot.node.id,
        status=initial_status(term[0], now),
        starts_at=term[0],
        ends_at=term[1],
        allowed_org_ids=tuple(request.allowed_org_ids),
        managing_org_ids=tuple(request.managing_org_ids),
        reserved_unit_ids=tuple(sorted(request.unit_ids)),
        contract_ref=request.contract_ref,
        reason=request.reason,
        topology_gen=snapshot.node.topology_gen,
        created_at=stamp,
        updated_at=stamp,
    )


def _commit(
    caller: Caller,
    snapshot: NodeSnapshot,
    reservation: Reservation,
    keyed: IdempotentRequest | None,
    ports: CreatePorts,
    now: datetime,
) -> Outcome | None:
    view = reservation_view(reservation, snapshot.node, now, (), reservation.updated_at)
    location = f"/v1/nodes/{reservation.node_id}/reservations/{reservation.id}"
    outcome = Outcome(201, response_json(view), (("Location", location),))
    named = set(reservation.reserved_unit_ids)
    write = ReservationCreate(
        reservation=reservation,
        node=ItemVersion(snapshot.node.id, snapshot.node.version),
        units=tuple(ItemVersion(u.id, u.version) for u in snapshot.units if u.id in named),
        caller_org_id=caller.org_id,
        caller_key_id=caller.key_id,
        owner_org_id=snapshot.node.owner_org_id,
    )
    try:
        ports.store.commit_create(write, idempotency.answer_record(keyed, outcome, now))
    except WriteConflict as conflict:
        replayed = idempotency.answer_from_conflict(keyed, conflict, now)
        if replayed is None:
            logger.info("create lost a race; retrying", extra={"reasons": str(conflict)})
        return replayed
    logger.info(
        "reservation created",
        extra={"nodeId": reservation.node_id, "reservationId": reservation.id,
               "callerOrgId": caller.org_id, "callerKeyId": caller.key_id},
    )  # fmt: skip
    metrics.add_metric(name="ReservationsCreated", unit=MetricUnit.Count, value=1)
    return outcome
