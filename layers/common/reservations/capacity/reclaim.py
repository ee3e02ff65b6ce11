"""``POST /v1/nodes/{nodeId}/reservations/{id}/reclaim``: return units, terminate spot work.

Decided from the node as read (``capacity.rules.plan``) and written in one conditional
transaction by the write pipeline. Then one message is sent per new termination. The
workload item is the outbox: a termination that could not be sent is still open on it, and
the sweeper delivers it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime

from reservations.capacity.errors import NotEnoughReleased, PlanStale
from reservations.capacity.managing import MANAGERS, managed
from reservations.capacity.models import (
    ReclaimRequest,
    ReclaimResponse,
    parse_reclaim_request,
    reclaim_document,
)
from reservations.capacity.ports import CapacityPorts
from reservations.capacity.rules import events as capacity_events
from reservations.capacity.rules.deadlines import (
    call_deadline,
    moved_earlier,
    termination_deadline,
)
from reservations.capacity.rules.idle import after_take_back
from reservations.capacity.rules.lending import CapacityRefusal
from reservations.capacity.rules.outbox import opened_by
from reservations.capacity.rules.plan import ReclaimPlan, plan_reclaim, units_by_count
from reservations.capacity.rules.plan_id import (
    PlanScope,
    SignedPlan,
    bind,
    changes_since,
    decode_plan,
    encode_plan,
)
from reservations.capacity.views import reclaim_response, reclaim_terminations
from reservations.capacity.writes import DeadlineChange, NewTermination, ReclaimAudit, ReclaimWrite
from reservations.kernel.caller import Caller
from reservations.kernel.envelope import EventContext, StoredEvent
from reservations.kernel.errors import ApiError, NotFound
from reservations.kernel.event_context import by_caller
from reservations.kernel.idempotency.models import Outcome
from reservations.kernel.pipeline import Body, Commit, Committed, Decision, Request, WriteSpec
from reservations.kernel.times import format_moment, to_millisecond
from reservations.kernel.writes import ItemVersion
from reservations.lifecycle import reservation_answer, route_reservation_etag
from reservations.nodes import (
    Node,
    NodeSnapshot,
    Reservation,
    TopologyRead,
    Workload,
    node_partition,
    termination_of,
    with_events,
)
from reservations.terminations import BatchSender, send_committed, termination_requested


def decide(
    snapshot: NodeSnapshot | None, request: Request[ReclaimRequest], caller: Caller, now: datetime
) -> NotFound | CapacityRefusal | NotEnoughReleased | PlanStale | Decision[ReclaimWrite]:
    """The plan as a write and the reservation after it; a dry run's plan, unwritten, and
    signed for its apply. A ``planId`` that is not this reservation's and this caller's is
    a 400 (raised: it is the body's)."""
    body = request.body
    scope = PlanScope(
        request.route.params["nodeId"], request.route.params["reservationId"], caller.org_id
    )
    signed = None
    if body.plan_id is not None:
        signed = decode_plan(body.plan_id, scope, request.signing_key())
    acted_on = managed(snapshot, request.route, caller, now, body.unit_ids or ())
    if isinstance(acted_on, ApiError):
        return acted_on
    read, reservation = acted_on
    node = read.node
    if signed is not None:
        return _apply(read, signed, caller, request, now)
    unit_ids = body.unit_ids
    if body.count is not None:
        unit_ids = list(units_by_count(read, reservation, body.count))
        if len(unit_ids) < body.count:
            return NotEnoughReleased(
                f"reservation {reservation.id} has {len(unit_ids)} released units; "
                f"{body.count} were asked for"
            )
    plan = plan_reclaim(read, reservation, unit_ids or ())
    if body.dry_run:
        # The plan is bound to the notice its dry run was asked for: its apply gives that one.
        bound = bind(plan, node, body.notice_seconds, now)
        offer = (encode_plan(bound, scope, request.signing_key()), bound.expires_at)
        return Decision(
            None, _answer(reclaim_response(reservation, node, now, would=plan, plan=offer))
        )
    write = reclaim_write(caller, node, plan, body.reason, request.new_id, now, body.notice_seconds)
    view = reclaim_response(reservation, node, now, done=plan)
    return Decision(write, _answer_due(view, plan, write))


def _apply(
    read: NodeSnapshot,
    signed: SignedPlan,
    caller: Caller,
    request: Request[ReclaimRequest],
    now: datetime,
) -> PlanStale | Decision[ReclaimWrite]:
    """Exactly the plan, while everything it is bound to is as it was: its units planned
    again on the node as read must find the same workloads in the same parts at the same
    versions, and those versions are the write's conditions. Its apply always moves the
    reservation's version, so the same plan never applies twice."""
    reservation = next(
        r for r in read.reservations if r.id == request.route.params["reservationId"]
    )
    plan = plan_reclaim(read, reservation, signed.unit_ids)
    if changed := changes_since(signed, read, plan, now):
        return PlanStale(
            "the plan is stale: "
            + "; ".join(problem.problem for problem in changed)
            + "; nothing was done",
            changed,
        )
    write = reclaim_write(
        caller,
        read.node,
        plan,
        request.body.reason,
        request.new_id,
        now,
        signed.notice_seconds,
        bump=True,
    )
    view = reclaim_response(reservation, read.node, now, done=plan, applied=True)
    return Decision(write, _answer_due(view, plan, write))


def _answer(view: ReclaimResponse) -> Outcome:
    """200, the reservation and its ETag."""
    return reservation_answer(view)


def _answer_due(view: ReclaimResponse, plan: ReclaimPlan, write: ReclaimWrite) -> Outcome:
    """A real run's answer: with this call's deadline (its commit plus the larger of its
    notice and the policy's) and each terminated workload's own."""
    deadline = write.terminate_at or write.at
    due = {
        "terminate_at": format_moment(deadline),
        "terminations": reclaim_terminations(plan, write),
    }
    return _answer(view.model_copy(update=due))


def reclaim_write(
    caller: Caller,
    node: Node,
    plan: ReclaimPlan,
    reason: str | None,
    new_id: Callable[[], str],
    now: datetime,
    notice_seconds: int = 0,
    *,
    bump: bool = False,
) -> ReclaimWrite:
    """The plan as one conditional write (on the node's topology as read too): a new reclaim
    id, the new terminations (:func:`_new_terminations`), the terminations under way due
    later moved to theirs. ``bump``: the reservation's version moves even when its releases
    do not change (a plan's apply)."""
    reservation = plan.reservation
    at = to_millisecond(now)
    deadline = call_deadline(at, notice_seconds, reservation)
    moved = moved_earlier(plan.already_terminating, deadline)
    taken = sorted(set(reservation.released_unit_ids) - set(plan.released_after))
    lending = after_take_back(reservation, taken, at) if taken and reservation.lending else None
    return ReclaimWrite(
        write_id=new_id(),
        node_id=reservation.node_id,
        reservation=ItemVersion(reservation.id, reservation.version),
        topology=TopologyRead(node.id, node.topology_gen),
        released_after=plan.released_after if bump or plan.releases_change else None,
        units=tuple(ItemVersion(u.id, u.version) for u in plan.units),
        terminations=_new_terminations(plan, new_id, at, deadline),
        unchanged_workloads=_only_checked(plan, [w for w, _ in moved]),
        reason=reason,
        audit=_audit(plan),
        caller_org_id=caller.org_id,
        caller_key_id=caller.key_id,
        at=at,
        managing_org_ids=reservation.managing_org_ids,
        deadline_changes=_moved(moved),
        terminate_at=deadline,
        lending_after=lending,
    )


def _new_terminations(
    plan: ReclaimPlan, new_id: Callable[[], str], at: datetime, deadline: datetime
) -> tuple[NewTermination, ...]:
    """New termination ids, each due at the latest of the call's ``deadline`` (the commit
    ``at``, to the millisecond, plus the larger of its notice and the reservation's policy's)
    and what the workload was promised (``capacity.rules.deadlines``)."""
    return tuple(
        NewTermination(
            ItemVersion(w.id, w.version), new_id(), termination_deadline(w, at, deadline)
        )
        for w in plan.to_terminate
    )


def _audit(plan: ReclaimPlan) -> ReclaimAudit:
    """What the reclaim says it did."""
    return ReclaimAudit(
        unit_ids=plan.unit_ids,
        released_before=plan.reservation.released_unit_ids,
        terminated=tuple(plan.terminated_ids),
        skipped=tuple(plan.skipped_ids),
    )


def _only_checked(plan: ReclaimPlan, moved: Sequence[Workload]) -> tuple[ItemVersion, ...]:
    """The workloads the write does not change, only conditions on: those skipped, and
    those terminating whose deadline it does not move."""
    moved_ids = {w.id for w in moved}
    kept = (*plan.already_terminating, *plan.skipped)
    return tuple(ItemVersion(w.id, w.version) for w in kept if w.id not in moved_ids)


def _moved(moved: Sequence[tuple[Workload, datetime]]) -> tuple[DeadlineChange, ...]:
    """Each termination under way moved to its new deadline: its next move."""
    return tuple(
        DeadlineChange(
            ItemVersion(w.id, w.version),
            termination_of(w).id,
            deadline,
            termination_of(w).deadline_changes + 1,
        )
        for w, deadline in moved
    )


def reclaim_events(snapshot: NodeSnapshot | None, write: ReclaimWrite) -> tuple[StoredEvent, ...]:
    """``reservation.reclaimed`` (the reservation as the reclaim leaves it, the units named,
    what it terminated and skipped), and one ``workload.termination_requested`` per new
    termination (one already under way is not requested again, unless this reclaim moves its
    deadline earlier: then it is requested again, same termination, new ``terminateAt``)."""
    assert snapshot is not None  # a reclaim is only decided on a node it read
    context = by_caller(write, write.node_id, snapshot.node.owner_org_id, write.write_id)
    return _reclaimed(context, snapshot, write)


def take_back_events(
    context: EventContext, snapshot: NodeSnapshot, write: ReclaimWrite, workload_id: str
) -> tuple[StoredEvent, ...]:
    """A placement's take-back (``workloads``): a reclaim's events in the placement's
    ``context``, its ``reservation.reclaimed`` with ``cause: "placement"`` and the workload
    placed."""
    cause = {"cause": "placement", "workloadId": workload_id}
    return _reclaimed(context, snapshot, write, cause)


def _reclaimed(
    context: EventContext,
    snapshot: NodeSnapshot,
    write: ReclaimWrite,
    cause: dict[str, str] | None = None,
) -> tuple[StoredEvent, ...]:
    before = next(r for r in snapshot.reservations if r.id == write.reservation.id)
    after = before
    if write.released_after is not None:
        after = replace(before, released_unit_ids=write.released_after)
    audit = write.audit
    workloads = {w.id: w for w in snapshot.workloads}
    return (
        capacity_events.reservation_reclaimed(
            context, after, audit.unit_ids, write.reason, audit.terminated, audit.skipped, cause
        ),
        *(
            termination_requested(
                context,
                workloads[t.workload.id],
                t.termination_id,
                before,
                write.reason,
                t.terminate_at,
            )
            for t in write.terminations
        ),
        *_requested_again(context, write, workloads, before),
    )


def _requested_again(
    context: EventContext, write: ReclaimWrite, workloads: dict[str, Workload], before: Reservation
) -> list[StoredEvent]:
    """A termination under way whose deadline the reclaim moved, requested again: its id,
    its first ``requestedAt``, the new ``terminateAt``."""
    return [
        termination_requested(
            context,
            workloads[moved.workload.id],
            moved.termination_id,
            before,
            write.reason,
            moved.terminate_at,
            termination_of(workloads[moved.workload.id]).requested_at,
        )
        for moved in write.deadline_changes
    ]


def committed(write: ReclaimWrite) -> Committed:
    audit = write.audit
    return Committed(
        "reclaim committed",
        {
            "units": list(audit.unit_ids),
            "terminated": list(audit.terminated),
            "skipped": list(audit.skipped),
        },
        {
            "Reclaims": 1,
            "UnitsReclaimed": len(audit.unit_ids),
            "WorkloadsTerminated": len(write.terminations),
            "WorkloadsSkipped": len(audit.skipped),
        },
    )


def send_terminations(
    snapshot: NodeSnapshot | None, write: ReclaimWrite, ports: CapacityPorts, now: datetime
) -> None:
    """After the commit: one message per new termination to the node's queue; what cannot
    be sent is still open on its workload, and the sweeper delivers it."""
    assert snapshot is not None  # a reclaim is only decided on a node it read
    send_opened(snapshot, write, ports.send_terminations, now)


def send_opened(
    snapshot: NodeSnapshot, write: ReclaimWrite, send: BatchSender, now: datetime
) -> None:
    """The terminations ``write`` opened or moved, sent to the node's queue (a reclaim's,
    or a placement's take-back)."""
    send_committed(snapshot.node, opened_by(write, snapshot.workloads), send, now)


RECLAIM: WriteSpec[ReclaimRequest, NodeSnapshot | None, ReclaimWrite, CapacityPorts] = WriteSpec(
    name="Reclaim",
    access=MANAGERS,
    body=Body(
        parse=parse_reclaim_request,
        dry_run=lambda body: body.dry_run,
        needs_key=lambda body: body.wants_key,
        document=reclaim_document,
    ),
    decide=decide,
    commit=Commit(
        partition=node_partition,
        committed=committed,
        finish=with_events(reclaim_events),
        after=send_terminations,
    ),
    conflict="reservation {reservationId} kept changing while reclaiming",
    etag=route_reservation_etag,
)
