"""What a spot workload is promised when it is placed (pure: the clock is passed in).

A unit's promise comes from the reservation governing it now (active inside its term, as
placement reads it): its lending policy's ``noticeSeconds`` and ``minRunSeconds``, or 0 when
it has no policy; a unit no reservation governs promises nothing (0). A workload on several
units gets, of each, the smallest its units promise: a promise holds for every unit it runs
on. The same rule answers the scheduler's list units (what a workload placed there now would
get) and fixes a placement's promises, so the two never disagree.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime

from reservations.nodes.models.partition import (
    NodeSnapshot,
    Reservation,
    ReservationStatus,
    Tier,
    Workload,
)
from reservations.nodes.rules.status import effective_status, in_term

# (notice seconds, minimum run seconds)
Promise = tuple[int, int]
NO_PROMISE: Promise = (0, 0)


def _lending(unit_id: str, snapshot: NodeSnapshot, now: datetime) -> Reservation | None:
    """The reservation governing the unit now for a spot workload: active inside its term
    (the smallest id, should bad data make two match)."""
    for reservation in sorted(snapshot.reservations, key=lambda r: r.id):
        if (
            unit_id in reservation.reserved_unit_ids
            and effective_status(reservation, snapshot.node, now) is ReservationStatus.ACTIVE
            and in_term(reservation, now)
        ):
            return reservation
    return None


def reservation_promise(reservation: Reservation | None, now: datetime) -> Promise:
    """What an ``active`` reservation holding a unit promises a spot workload placed on it
    now: its policy's, once its term has started (none, or before: nothing)."""
    if reservation is None or reservation.lending is None or not in_term(reservation, now):
        return NO_PROMISE
    return reservation.lending.notice_seconds, reservation.lending.min_run_seconds


def unit_promise(unit_id: str, snapshot: NodeSnapshot, now: datetime) -> Promise:
    """What one unit promises a spot workload placed on it now."""
    return reservation_promise(_lending(unit_id, snapshot, now), now)


def promised(unit_ids: Iterable[str], snapshot: NodeSnapshot, now: datetime) -> Promise:
    """Each promise the smallest over the units (none named: nothing promised)."""
    promises = [unit_promise(unit_id, snapshot, now) for unit_id in unit_ids]
    if not promises:
        return NO_PROMISE
    return min(p[0] for p in promises), min(p[1] for p in promises)


def with_promises(workload: Workload, snapshot: NodeSnapshot, now: datetime) -> Workload:
    """The workload as placed now, its promises fixed (a spot workload's; any other tier is
    never reclaimed and is promised nothing)."""
    if workload.tier is not Tier.SPOT:
        return workload
    notice, min_run = promised(workload.unit_ids, snapshot, now)
    return replace(workload, promised_notice_seconds=notice, promised_min_run_seconds=min_run)
