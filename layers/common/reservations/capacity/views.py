"""A reclaim's answer, from the reservation as the write left it and what it did."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from reservations.capacity.models import ReclaimResponse, ReclaimTermination
from reservations.capacity.rules.plan import ReclaimPlan
from reservations.capacity.writes import ReclaimWrite
from reservations.kernel.times import format_moment, format_time
from reservations.lifecycle import reservation_view
from reservations.nodes import Node, Reservation, termination_of


def reclaim_response(
    reservation: Reservation,
    node: Node,
    now: datetime,
    *,
    done: ReclaimPlan | None = None,
    would: ReclaimPlan | None = None,
    plan: tuple[str, datetime] | None = None,
    applied: bool = False,
) -> ReclaimResponse:
    """The reservation after a reclaim (``done``: at its next version when the releases
    change, the write's, or always for a plan's ``applied``) or as a dry run leaves it
    (``would``: as it is, with its signed ``plan`` and expiry)."""
    if done is not None and (applied or done.releases_change):
        reservation = replace(
            reservation,
            released_unit_ids=done.released_after,
            updated_at=now,
            version=reservation.version + 1,
        )
    released, updated_at = reservation.released_unit_ids, reservation.updated_at
    view = reservation_view(reservation, node, now, released, updated_at)
    acted = done if done is not None else would
    return ReclaimResponse(
        **view.model_dump(),
        terminated=done.terminated_ids if done else None,
        skipped=done.skipped_ids if done else None,
        would_terminate=would.terminated_ids if would else None,
        would_skip=would.skipped_ids if would else None,
        reclaimed_unit_ids=list(acted.unit_ids) if acted else [],
        plan_id=plan[0] if plan else None,
        plan_expires_at=format_time(plan[1]) if plan else None,
    )


def reclaim_terminations(plan: ReclaimPlan, write: ReclaimWrite) -> list[ReclaimTermination]:
    """Each workload the real run counts as terminated, by id: a new termination with the
    deadline the write gives it, one under way with the one it moves it to or its own (one
    stored before deadlines: due at its request, or at once)."""
    due = {
        t.workload.id: (t.termination_id, t.terminate_at or write.at) for t in write.terminations
    }
    due |= {c.workload.id: (c.termination_id, c.terminate_at) for c in write.deadline_changes}
    for workload in plan.already_terminating:
        termination = termination_of(workload)
        due.setdefault(workload.id, (termination.id, termination.deadline or write.at))
    return [
        ReclaimTermination(
            workload_id=workload_id, termination_id=tid, terminate_at=format_moment(deadline)
        )
        for workload_id, (tid, deadline) in sorted(due.items())
    ]
