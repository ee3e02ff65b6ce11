"""The platform scheduler's calls: ``POST /v1/nodes/{nodeId}/workloads`` places a workload,
``DELETE /v1/nodes/{nodeId}/workloads/{workloadId}`` ends one that stopped on its own.

Each is decided from the node as read (rules.placement, rules.terminations) and written by
the write pipeline in one conditional transaction. A placement conditions on the node, the
units and the reservations governing them, as a reclaim conditions on the units and its
reservation: of a placement and a reclaim deciding from the same snapshot, one fails and
decides again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime

from reservations.capacity import (
    ReclaimWrite,
    plan_reclaim,
    reclaim_write,
    send_opened,
    take_back_events,
)
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
from reservations.lifecycle import ReservationNotActive
from reservations.nodes import (
    NodeSnapshot,
    Reservation,
    Tier,
    Unit,
    UnitsUnavailable,
    Workload,
    WorkloadState,
    is_workload_id,
    node_partition,
    termination_of,
    with_events,
    with_promises,
    workload_view,
)
from reservations.terminations import LetGo, gpus_held, let_go, started_events
from reservations.workloads.errors import (
    NotEnoughUnits,
    OrgNotInAudience,
    UnitsNotSellable,
    UnknownReservation,
    WorkloadExists,
)
from reservations.workloads.models import (
    PlaceWorkloadRequest,
    parse_place_request,
    place_document,
)
from reservations.workloads.ports import WorkloadPorts
from reservations.workloads.rules import events as workloads_events
from reservations.workloads.rules.access import may_place_workloads
from reservations.workloads.rules.placement import (
    PlacementRefusal,
    not_sellable,
    reservations_read,
    unavailable,
)
from reservations.workloads.rules.take_back import (
    TakeBack,
    acted_on,
    available_in_order,
    named_refusals,
    take_back,
)
from reservations.workloads.writes import (
    EndLetGo,
    PlacementWrite,
    TakeBackPlacement,
    WorkloadEnd,
)
from termination_messages import WorkloadKind

# What a placement may be refused with on its node.
PlaceRefusal = WorkloadExists | UnitsUnavailable | UnitsNotSellable
# ... and a placement with ``reservationId`` besides.
TakeBackRefusal = UnknownReservation | ReservationNotActive | OrgNotInAudience | NotEnoughUnits


def decide_placement(
    snapshot: NodeSnapshot | None,
    request: Request[PlaceWorkloadRequest],
    caller: Caller,
    now: datetime,
) -> NotFound | PlaceRefusal | TakeBackRefusal | Decision[PlacementWrite | TakeBackPlacement]:
    """The workload placed, running, and 201 with it (409 before 422, as everywhere); with
    ``reservationId``, the audience's work taking lent units back (:func:`decide_take_back`)."""
    if snapshot is None:
        return NotFound()
    if request.body.reservation_id is not None:
        return decide_take_back(snapshot, request, caller, now)
    if refusal := placement_refusal(snapshot, request.body, now):
        return refusal
    write = placement_write(caller, snapshot, request.body, request.new_id(), now)
    view = workload_view(snapshot.node.id, write.workload, now)
    return Decision(write, Outcome(201, response_json(view)))


def decide_take_back(
    snapshot: NodeSnapshot,
    request: Request[PlaceWorkloadRequest],
    caller: Caller,
    now: datetime,
) -> PlaceRefusal | TakeBackRefusal | Decision[PlacementWrite | TakeBackPlacement]:
    """The audience's work on a reservation: 409 ``workload_exists``; 422
    ``unknown_reservation``, 409 ``reservation_not_active``, 422 ``org_not_in_audience``
    (the reservation first: nothing about the units means anything without it); 409
    ``units_unavailable`` or ``not_enough_units``; 422 ``units_not_sellable``. Then the
    units the reservation has lent are taken back in the placement's write: 201 running
    when every unit was free, else 202 waiting for the spot workloads still on them."""
    body = request.body
    assert body.reservation_id is not None  # only a placement with one is decided here
    if any(w.id == body.id for w in snapshot.workloads):
        return WorkloadExists(f"workload {body.id} is already on node {snapshot.node.id}")
    reservation = acted_on(snapshot, body.reservation_id, body.org_id, now)
    if not isinstance(reservation, Reservation):
        return reservation
    unit_ids = _given_units(snapshot, reservation, body)
    if not isinstance(unit_ids, list):
        return unit_ids
    plan = take_back(snapshot, reservation, unit_ids)
    write = take_back_write(caller, snapshot, body, plan, request.new_id, now)
    view = workload_view(snapshot.node.id, write.workload, now)
    status = 202 if write.held else 201
    return Decision(write, Outcome(status, response_json(view)))


def _given_units(
    snapshot: NodeSnapshot, reservation: Reservation, body: PlaceWorkloadRequest
) -> list[str] | UnitsUnavailable | UnitsNotSellable | NotEnoughUnits:
    """The units the take-back gives: ``count`` of them in the rule's order (409 when it
    cannot give that many), or those named, each one it may give (409, naming each one it
    may not and why; then 422 for a unit not on the node or not sellable)."""
    if body.count is not None:
        available = available_in_order(snapshot, reservation)
        if len(available) < body.count:
            return NotEnoughUnits(
                f"reservation {reservation.id} can give {len(available)} units; "
                f"{body.count} were asked for"
            )
        return available[: body.count]
    unit_ids = list(body.unit_ids or ())
    if refused := named_refusals(snapshot, reservation, unit_ids):
        return UnitsUnavailable(
            f"units not available to {body.org_id} on reservation {reservation.id}: "
            f"{_ids(refused)}",
            _problems(unit_ids, refused),
        )
    if refused := not_sellable(unit_ids, snapshot.units):
        return UnitsNotSellable(
            f"units not sellable on node {snapshot.node.id}: {_ids(refused)}",
            _problems(unit_ids, refused),
        )
    return unit_ids


def take_back_write(
    caller: Caller,
    snapshot: NodeSnapshot,
    request: PlaceWorkloadRequest,
    plan: TakeBack,
    new_id: Callable[[], str],
    now: datetime,
) -> TakeBackPlacement:
    """The placement and its take-back as one write: the reclaim of the units taken back
    (``capacity``'s, with no notice of its own: each spot workload's deadline is the latest
    of the commit, the reservation's policy notice and its own promises), the workload
    waiting on each spot workload still on a unit it gets, with that termination's id and
    deadline (a new one, or one under way, moved earlier when the take-back moves it)."""
    reservation = plan.reservation
    reclaim = None
    if plan.taken_back:
        why = f"taken back for workload {request.id}"
        reclaim_plan = plan_reclaim(snapshot, reservation, plan.taken_back)
        reclaim = reclaim_write(caller, snapshot.node, reclaim_plan, why, new_id, now, bump=True)
    placement = PlacementWrite(
        write_id=reclaim.write_id if reclaim is not None else new_id(),
        node=ItemVersion(snapshot.node.id, snapshot.node.version),
        workload=_taking_back(snapshot, request, plan, reclaim, now),
        units=tuple(ItemVersion(u.id, u.version) for u in plan.claimed),
        reservations=(),
        caller_org_id=caller.org_id,
        caller_key_id=caller.key_id,
        at=now,
    )
    return TakeBackPlacement(
        placement=placement,
        held=tuple(ItemVersion(u.id, u.version) for u in plan.held),
        reservation=ItemVersion(reservation.id, reservation.version),
        take_back=reclaim,
    )


def _taking_back(
    snapshot: NodeSnapshot,
    request: PlaceWorkloadRequest,
    plan: TakeBack,
    reclaim: ReclaimWrite | None,
    now: datetime,
) -> Workload:
    """The workload a take-back places: running, or waiting on the spot workloads still on
    units it gets (then it uses nothing yet: its use starts with its workload.started)."""
    return replace(
        placed_workload(request, now, plan.unit_ids),
        state=WorkloadState.WAITING if plan.held else WorkloadState.RUNNING,
        waiting_for=_waiting_for(snapshot, plan.held, reclaim, now),
        used_from=None if plan.held else now,
    )


def _waiting_for(
    snapshot: NodeSnapshot, held: Sequence[Unit], reclaim: ReclaimWrite | None, now: datetime
) -> tuple[tuple[str, str, datetime], ...]:
    """Each spot workload claiming a held unit, by id, with the termination the workload
    waits on: the one the take-back opens, or the one under way (at its deadline as the
    take-back leaves it)."""
    opened = {t.workload.id: t for t in reclaim.terminations} if reclaim else {}
    moved = {c.workload.id: c.terminate_at for c in reclaim.deadline_changes} if reclaim else {}
    claims = {u.claimed_by for u in held}
    waited = []
    for spot in sorted(snapshot.workloads, key=lambda w: w.id):
        if spot.claim not in claims:
            continue
        if (new := opened.get(spot.id)) is not None:
            waited.append((spot.id, new.termination_id, new.terminate_at or now))
        else:
            termination = termination_of(spot)
            deadline = moved.get(spot.id, termination.deadline)
            waited.append((spot.id, termination.id, deadline or now))
    return tuple(waited)


def placement_refusal(
    snapshot: NodeSnapshot, request: PlaceWorkloadRequest, now: datetime
) -> PlaceRefusal | None:
    """409 ``workload_exists``, then 409 ``units_unavailable``, then 422 ``units_not_sellable``
    (the fleet loader asks it too, of each running workload of a file)."""
    if any(w.id == request.id for w in snapshot.workloads):
        return WorkloadExists(f"workload {request.id} is already on node {snapshot.node.id}")
    tier = Tier(request.tier)
    unit_ids = request.unit_ids or []  # a placement without reservationId always names them
    if refused := unavailable(snapshot, unit_ids, request.org_id, tier, now):
        return UnitsUnavailable(
            f"units not available to {request.org_id} at tier {tier.value}: {_ids(refused)}",
            _problems(unit_ids, refused),
        )
    if refused := not_sellable(unit_ids, snapshot.units):
        return UnitsNotSellable(
            f"units not sellable on node {snapshot.node.id}: {_ids(refused)}",
            _problems(unit_ids, refused),
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
    unit_ids = request.unit_ids or []
    named = set(unit_ids)
    return PlacementWrite(
        write_id=write_id,
        node=ItemVersion(snapshot.node.id, snapshot.node.version),
        workload=with_promises(placed_workload(request, now), snapshot, now),
        units=tuple(ItemVersion(u.id, u.version) for u in snapshot.units if u.id in named),
        reservations=tuple(
            ItemVersion(r.id, r.version) for r in reservations_read(snapshot, unit_ids, now)
        ),
        caller_org_id=caller.org_id,
        caller_key_id=caller.key_id,
        at=now,
    )


def placed_workload(
    request: PlaceWorkloadRequest, now: datetime, unit_ids: Sequence[str] | None = None
) -> Workload:
    """The workload a placement stores: running, its units (``unit_ids``, else the
    request's) in id order, placed now, its use starting with the placement's commit."""
    return Workload(
        id=request.id,
        kind=WorkloadKind(request.kind),
        tier=Tier(request.tier),
        org_id=request.org_id,
        unit_ids=tuple(sorted(unit_ids if unit_ids is not None else request.unit_ids or ())),
        state=WorkloadState.RUNNING,
        created_at=now,
        used_from=now,
    )


def decide_end(
    snapshot: NodeSnapshot | None, request: Request[None], caller: Caller, now: datetime
) -> NotFound | Decision[WorkloadEnd]:
    """The workload gone from the node, the units it held free (or, a spot workload's units
    held for a waiting workload, handed over to it: its ``workload.started`` when it waits
    on nothing more), a waiting workload's holds dropped, and 204; the one 404 for an
    unknown node or workload (which the pipeline answers from the key's first end, if any)."""
    workload_id = request.route.params["workloadId"]
    workloads = snapshot.workloads if snapshot else ()
    workload = next((w for w in workloads if w.id == workload_id), None)
    if snapshot is None or workload is None:
        return NotFound()
    released = let_go(workload, snapshot)
    dropped = tuple(
        ItemVersion(u.id, u.version) for u in snapshot.units if u.held_for == workload.claim
    )
    end = WorkloadEnd(
        write_id=request.new_id(),
        node_id=snapshot.node.id,
        workload=workload,
        freed_units=released.freed,
        caller_org_id=caller.org_id,
        caller_key_id=caller.key_id,
        at=now,
        let_go=EndLetGo(released.handed, released.waiters, dropped)
        if released.handed or released.waiters or dropped
        else None,
        gpus=gpus_held(workload, snapshot.units),
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


def _committed(message: str, write: PlacementWrite | TakeBackPlacement | WorkloadEnd) -> Committed:
    workload = write.workload
    context = {
        "workloadId": workload.id,
        "state": workload.state.value,
        "tier": workload.tier.value,
        "units": list(workload.unit_ids),
    }
    counts = {"WorkloadsEnded": 1}
    if isinstance(write, PlacementWrite | TakeBackPlacement):
        counts = {"WorkloadsPlaced": 1}
    if isinstance(write, TakeBackPlacement):
        taken = write.take_back.audit.unit_ids if write.take_back else ()
        context |= {"reservationId": write.reservation.id, "takenBack": list(taken)}
        counts |= {"UnitsTakenBack": len(taken), "UnitsHeld": len(write.held)}
    return Committed(message, context, counts)


def placement_events(
    snapshot: NodeSnapshot | None, write: PlacementWrite | TakeBackPlacement
) -> tuple[StoredEvent, ...]:
    """``workload.placed``: the workload as placed; a take-back's also says what it took
    back and what it waits on, followed by the take-back's reclaim events
    (``reservation.reclaimed`` with ``cause: "placement"``, each termination requested)."""
    assert snapshot is not None  # a placement is only decided on a node it read
    placement = write.placement if isinstance(write, TakeBackPlacement) else write
    context = by_caller(
        placement, placement.node.id, snapshot.node.owner_org_id, placement.write_id
    )
    if not isinstance(write, TakeBackPlacement):
        return (workloads_events.workload_placed(context, write.workload),)
    reclaim = write.take_back
    placed = workloads_events.workload_placed(
        context,
        write.workload,
        reservation_id=write.reservation.id,
        reclaimed_unit_ids=reclaim.audit.unit_ids if reclaim else (),
    )
    if reclaim is None:
        return (placed,)
    return (placed, *take_back_events(context, snapshot, reclaim, write.workload.id))


def end_events(snapshot: NodeSnapshot | None, write: WorkloadEnd) -> tuple[StoredEvent, ...]:
    """``workload.ended``: the units it freed, the termination it closed, if any; and
    ``workload.started`` for each waiting workload it was the last one to wait on."""
    assert snapshot is not None  # an end is only decided on a node it read
    context = by_caller(write, write.node_id, snapshot.node.owner_org_id, write.write_id)
    freed = (unit.id for unit in write.freed_units)
    waiters = write.let_go.waiters if write.let_go else ()
    return (
        workloads_events.workload_ended(context, write.workload, freed, gpus=write.gpus),
        *started_events(context, LetGo(waiters=waiters)),
    )


def _no_body(_raw: RawBody) -> None:
    """An end is named by its path alone: a body, if any, is not read."""


def _placed(write: PlacementWrite | TakeBackPlacement) -> Committed:
    return _committed("workload placed", write)


def send_taken_back(
    snapshot: NodeSnapshot | None,
    write: PlacementWrite | TakeBackPlacement,
    ports: WorkloadPorts,
    now: datetime,
) -> None:
    """After a take-back's commit: one message per termination it opened or moved, to the
    node's queue, as a reclaim sends them (what cannot be sent, the sweeper delivers)."""
    if snapshot is None or not isinstance(write, TakeBackPlacement) or write.take_back is None:
        return
    send_opened(snapshot, write.take_back, ports.send_terminations, now)


def _ended(write: WorkloadEnd) -> Committed:
    return _committed("workload ended", write)


# The platform scheduler's calls: ``workload.place``, operator keys only; no node's data
# can change it, so it is settled before any read.
SCHEDULER: Access[NodeSnapshot | None] = Access(may_place_workloads)

PLACE: WriteSpec[
    PlaceWorkloadRequest, NodeSnapshot | None, PlacementWrite | TakeBackPlacement, WorkloadPorts
] = WriteSpec(
    name="Placement",
    access=SCHEDULER,
    body=Body(parse=parse_place_request, document=place_document),
    decide=decide_placement,
    commit=Commit(
        partition=node_partition,
        committed=_placed,
        finish=with_events(placement_events),
        after=send_taken_back,
    ),
    conflict="node {nodeId} kept changing while placing {body.id}",
)

END: WriteSpec[None, NodeSnapshot | None, WorkloadEnd, WorkloadPorts] = WriteSpec(
    name="WorkloadEnd",
    access=SCHEDULER,
    body=Body(parse=_no_body),
    decide=decide_end,
    commit=Commit(partition=node_partition, committed=_ended, finish=with_events(end_events)),
    conflict="workload {workloadId} kept changing while ending it",
    first_answer_for=(NotFound,),
    path_ids={"workloadId": is_workload_id},
)
