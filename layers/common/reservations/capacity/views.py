"""A reclaim's answer, from the reservation as the write left it and what it did."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from reservations.capacity.models import ReclaimResponse
from reservations.capacity.rules.plan import ReclaimPlan
from reservations.nodes import Node, Reservation, reservation_view


def reclaim_response(
    reservation: Reservation,
    node: Node,
    now: datetime,
    *,
    done: ReclaimPlan | None = None,
    would: ReclaimPlan | None = None,
) -> ReclaimResponse:
    """The reservation after a reclaim (``done``: at its next version when the releases
    change, the write's) or as a dry run leaves it (``would``: as it is)."""
    if done is not None and done.releases_change:
        reservation = replace(
            reservation,
            released_unit_ids=done.released_after,
            updated_at=now,
            version=reservation.version + 1,
        )
    released, updated_at = reservation.released_unit_ids, reservation.updated_at
    view = reservation_view(reservation, node, now, released, updated_at)
    return ReclaimResponse(
        **view.model_dump(),
        terminated=done.terminated_ids if done else None,
        skipped=done.skipped_ids if done else None,
        would_terminate=would.terminated_ids if would else None,
        would_skip=would.skipped_ids if would else None,
    )
