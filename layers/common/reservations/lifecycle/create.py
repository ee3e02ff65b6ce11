"""``POST /v1/nodes/{nodeId}/reservations``: reserve units of a node for an audience.

Decided from the node as read (``reservations.rules.term``) and written by the write pipeline in
one conditional transaction on the node item's version (which it bumps, so two creates on
one node serialize) and on every named unit's. A lost race reads and decides again: the
loser of two overlapping creates then sees the winner and answers 409 ``units_unavailable``.
"""

from __future__ import annotations

import secrets
import string
from collections.abc import Callable
from datetime import datetime
from typing import Any

from reservations.kernel.caller import Caller
from reservations.kernel.envelope import StoredEvent
from reservations.kernel.errors import ApiError, FieldProblem, InvalidRequest, NotFound
from reservations.kernel.event_context import by_caller
from reservations.kernel.pipeline import Body, Commit, Committed, Decision, Request, WriteSpec
from reservations.kernel.settings import expiry_warning_minutes, settings
from reservations.kernel.writes import ItemVersion
from reservations.lifecycle.changes import OWNERS
from reservations.lifecycle.errors import UnitsNotReservable
from reservations.lifecycle.models import CreateReservationRequest, parse_create_request
from reservations.lifecycle.rules import events as reservations_events
from reservations.lifecycle.rules.access import may_write_reservations
from reservations.lifecycle.rules.history import named_after_create, naming_the_same
from reservations.lifecycle.rules.term import (
    Term,
    UnitReason,
    initial_status,
    new_term,
    not_reservable,
    unavailable,
)
from reservations.lifecycle.views import reservation_answer, reservation_view
from reservations.lifecycle.writes import ReservationCreate
from reservations.nodes import (
    NodePorts,
    NodeSnapshot,
    Reservation,
    UnitsUnavailable,
    node_partition,
    with_events,
)

_ID_ALPHABET = string.ascii_lowercase + string.digits


def new_reservation_id() -> str:
    """``res-`` and 20 random lowercase letters or digits (about 103 bits)."""
    return "res-" + "".join(secrets.choice(_ID_ALPHABET) for _ in range(20))


# What a create may be refused with on a node it may write reservations on.
CreateRefusal = UnitsUnavailable | UnitsNotReservable


def decide(
    snapshot: NodeSnapshot | None,
    request: Request[CreateReservationRequest],
    caller: Caller,
    now: datetime,
) -> NotFound | CreateRefusal | Decision[ReservationCreate]:
    """The new reservation, its write, and 201 with it and its Location."""
    if snapshot is None or not may_write_reservations(caller, snapshot):
        return NotFound()
    made = decide_create(snapshot, request.body, request.new_id, now)
    if isinstance(made, ApiError):
        return made
    view = reservation_view(made, snapshot.node, now, (), made.updated_at)
    location = f"{request.route.path}/{made.id}"
    answer = reservation_answer(view, 201, (("Location", location),))
    retention = settings().history_retention_days
    return Decision(_create_write(caller, snapshot, made, retention, now), answer)


def _create_write(
    caller: Caller,
    snapshot: NodeSnapshot,
    reservation: Reservation,
    retention_days: int,
    now: datetime,
) -> ReservationCreate:
    """Conditioned on the node and the units read; each org it names, named until the
    latest end among it and the node's reservations as read naming that org."""
    named = set(reservation.reserved_unit_ids)
    named_by = naming_the_same(snapshot.reservations, reservation)
    return ReservationCreate(
        reservation=reservation,
        node=ItemVersion(snapshot.node.id, snapshot.node.version),
        units=tuple(ItemVersion(u.id, u.version) for u in snapshot.units if u.id in named),
        caller_org_id=caller.org_id,
        caller_key_id=caller.key_id,
        at=now,
        owner_org_id=snapshot.node.owner_org_id,
        named_until=named_after_create(reservation, named_by, retention_days),
    )


def decide_create(
    snapshot: NodeSnapshot,
    request: CreateReservationRequest,
    new_id: Callable[[], str],
    now: datetime,
) -> Reservation | CreateRefusal:
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
) -> CreateRefusal | None:
    """409 for units held or claimed, then 422 for units not on the node or not reservable."""
    units = request.unit_ids
    if held := unavailable(snapshot, units, term, request.allowed_org_ids, now):
        return UnitsUnavailable(_message("units unavailable", held), _details(units, held))
    if refused := not_reservable(snapshot, units):
        return UnitsNotReservable(
            _message("units not reservable", refused), _details(units, refused)
        )
    return None


def _message(title: str, refusals: list[UnitReason]) -> str:
    return f"{title}: " + ", ".join(unit_id for unit_id, _ in refusals)


def _details(unit_ids: list[str], refusals: list[UnitReason]) -> list[FieldProblem]:
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
        warning_minutes=expiry_warning_minutes(),
        armed_at=stamp,
    )


def create_events(
    _snapshot: NodeSnapshot | None, write: ReservationCreate
) -> tuple[StoredEvent, ...]:
    """``reservation.created``: the reservation as made (its id is the write's), at the
    write's millisecond."""
    made = write.reservation
    context = by_caller(write, made.node_id, write.owner_org_id, made.id)
    return (reservations_events.reservation_created(context, made),)


def committed(write: ReservationCreate) -> Committed:
    context = {"reservationId": write.reservation.id, "status": write.reservation.status.value}
    return Committed("reservation created", context, {"ReservationsCreated": 1})


def _term_is_valid(body: CreateReservationRequest, now: datetime) -> None:
    """A bad term is a 400 before any write."""
    new_term(*body.term(), now)


def _as_sent(body: CreateReservationRequest) -> Any:
    """Absent optional fields and null ones are the same request."""
    return body.model_dump(mode="json", by_alias=True, exclude_none=True)


CREATE: WriteSpec[CreateReservationRequest, NodeSnapshot | None, ReservationCreate, NodePorts] = (
    WriteSpec(
        name="Create",
        access=OWNERS,
        body=Body(parse=parse_create_request, document=_as_sent, timely=_term_is_valid),
        decide=decide,
        commit=Commit(
            partition=node_partition, committed=committed, finish=with_events(create_events)
        ),
        conflict="node {nodeId} kept changing while creating the reservation",
        first_answer_for=(InvalidRequest,),
    )
)
