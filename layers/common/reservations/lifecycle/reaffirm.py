"""``POST /v1/nodes/{nodeId}/reservations/{id}/reaffirm``: a reservation that a topology
change put under review is confirmed on the node's current topology.

Decided by the rules (only from ``needs-review``; every reserved unit still on the node and
reservable), then written by the write pipeline in one conditional transaction on the
reservation and the node item.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from reservations.kernel.caller import Caller
from reservations.kernel.envelope import StoredEvent
from reservations.kernel.errors import FieldProblem, NotFound
from reservations.kernel.event_context import by_caller
from reservations.kernel.pipeline import Body, Commit, Committed, Decision, Request, WriteSpec
from reservations.kernel.settings import expiry_warning_minutes
from reservations.kernel.writes import ItemVersion
from reservations.lifecycle.changes import found
from reservations.lifecycle.errors import ReservationNotInReview, UnitsNotReservable
from reservations.lifecycle.models import ReaffirmRequest, parse_reaffirm_request
from reservations.lifecycle.rules import events as reservations_events
from reservations.lifecycle.rules import lending
from reservations.lifecycle.rules.clock import (
    ClockKind,
    ClockMoment,
    activation_at_reaffirm,
    with_fired,
)
from reservations.lifecycle.rules.term import initial_status, not_reservable
from reservations.lifecycle.views import (
    reservation_answer,
    reservation_view,
    route_reservation_etag,
)
from reservations.lifecycle.writes import ReaffirmWrite
from reservations.nodes import (
    OPERATOR,
    NodePorts,
    NodeSnapshot,
    Reservation,
    ReservationStatus,
    effective_status,
    node_partition,
    with_events,
)


def decide(
    snapshot: NodeSnapshot | None, request: Request[ReaffirmRequest], caller: Caller, now: datetime
) -> ReaffirmAnswer:
    """200 with the reservation out of review."""
    acted_on = found(
        snapshot,
        request.route,
        lambda _read, _reservation: True,  # the operator's: any reservation of any node
    )
    if isinstance(acted_on, NotFound):
        return acted_on
    read, reservation = acted_on
    if refusal := reaffirm_refusal(read, reservation, now):
        return refusal
    write = reaffirm_write(caller, read, reservation, request.body.reason, request.new_id(), now)
    affirmed = replace(
        reservation,
        status=write.status,
        topology_gen=write.topology_gen,
        released_unit_ids=(),
        updated_at=now,
        version=reservation.version + 1,
    )
    view = reservation_view(affirmed, read.node, now, (), now)
    return Decision(write, reservation_answer(view))


ReaffirmRefusal = ReservationNotInReview | UnitsNotReservable
# What ``decide`` answers: the 404, a refusal, or the write out of review.
ReaffirmAnswer = NotFound | ReaffirmRefusal | Decision[ReaffirmWrite]


def reaffirm_refusal(
    snapshot: NodeSnapshot, reservation: Reservation, now: datetime
) -> ReaffirmRefusal | None:
    """409 unless it is under review now (stored or derived; an ended review is expired);
    422 naming each reserved unit gone or not reservable."""
    status = effective_status(reservation, snapshot.node, now)
    if status is not ReservationStatus.NEEDS_REVIEW:
        return ReservationNotInReview(
            f"reservation {reservation.id} is {status.value}, not needs-review"
        )
    reserved = sorted(reservation.reserved_unit_ids)  # as the reservation object shows them
    if refusals := not_reservable(snapshot, reserved):
        return UnitsNotReservable(
            f"reservation {reservation.id} holds units that are not reservable: "
            + ", ".join(unit_id for unit_id, _ in refusals),
            [
                FieldProblem(f"reservedUnitIds[{reserved.index(unit_id)}]", f"{unit_id}: {why}")
                for unit_id, why in refusals
            ],
        )
    return None


def reaffirm_write(
    caller: Caller,
    snapshot: NodeSnapshot,
    reservation: Reservation,
    reason: str | None,
    write_id: str,
    now: datetime,
) -> ReaffirmWrite:
    """The reservation on the node's generation, pending or active by the clock."""
    status = initial_status(reservation.starts_at, now)
    clock = lending.reaffirmed(replace(reservation, status=status), now)
    if status is ReservationStatus.ACTIVE and activation_at_reaffirm(reservation, now):
        clock = with_fired(clock, ClockKind.ACTIVATED, reservation.starts_at)
    return ReaffirmWrite(
        write_id=write_id,
        node_id=snapshot.node.id,
        reservation=ItemVersion(reservation.id, reservation.version),
        node=ItemVersion(snapshot.node.id, snapshot.node.version),
        status=status,
        topology_gen=snapshot.node.topology_gen,
        reason=reason,
        caller_org_id=caller.org_id,
        caller_key_id=caller.key_id,
        at=now,
        clock=clock,
    )


def reaffirm_events(snapshot: NodeSnapshot | None, write: ReaffirmWrite) -> tuple[StoredEvent, ...]:
    """``reservation.reaffirmed``: the status and generation it takes, nothing released."""
    assert snapshot is not None  # a re-affirm is only decided on a node it read
    context = by_caller(write, write.node_id, snapshot.node.owner_org_id, write.write_id)
    before = next(r for r in snapshot.reservations if r.id == write.reservation.id)
    after = replace(
        before, status=write.status, topology_gen=write.topology_gen, released_unit_ids=()
    )
    reaffirmed = reservations_events.reservation_reaffirmed(context, after, write.reason)
    if write.clock is None or dict(write.clock.clock_fired) == dict(before.clock_fired):
        return (reaffirmed,)
    # ``.activated``, which a review stood in the way of, at this commit (``time``)
    moment = ClockMoment(write.at.replace(microsecond=0), ClockKind.ACTIVATED)
    activated = reservations_events.clock_event(
        snapshot.node.owner_org_id, write.clock, moment, expiry_warning_minutes()
    )
    return (reaffirmed, activated)


def committed(write: ReaffirmWrite) -> Committed:
    context = {"status": write.status.value, "topologyGen": write.topology_gen}
    return Committed("reservation re-affirmed", context, {"ReservationsReaffirmed": 1})


REAFFIRM: WriteSpec[ReaffirmRequest, NodeSnapshot | None, ReaffirmWrite, NodePorts] = WriteSpec(
    name="Reaffirm",
    access=OPERATOR,
    body=Body(parse=parse_reaffirm_request),
    decide=decide,
    commit=Commit(
        partition=node_partition, committed=committed, finish=with_events(reaffirm_events)
    ),
    conflict="reservation {reservationId} kept changing while it was re-affirmed",
    etag=route_reservation_etag,
)
