"""A reclaim's answer, from the reservation as the write left it and what it did."""

from __future__ import annotations

from datetime import datetime

from reservations.capacity.models import ReclaimResponse
from reservations.capacity.rules.plan import ReclaimPlan
from reservations.kernel.times import format_time
from reservations.nodes import Node, Reservation, reservation_view


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
    """The reservation after a reclaim (``done``; ``applied``: a plan's, which always
    writes it) or as a dry run leaves it (``would``, with its signed ``plan`` and expiry)."""
    released = reservation.released_unit_ids
    updated_at = reservation.updated_at
    if done is not None and (applied or done.releases_change):
        released, updated_at = done.released_after, now
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
