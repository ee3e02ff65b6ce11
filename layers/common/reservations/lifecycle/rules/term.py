"""What a new reservation may be: its term, the units it may take, and its first status."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from reservations.kernel.errors import FieldProblem, InvalidRequest
from reservations.kernel.times import format_time, term_problem
from reservations.nodes import (
    NodeSnapshot,
    Reservation,
    ReservationStatus,
    effective_status,
    not_reservable_reason,
)

# A client's clock may lag, and a request may wait in a retry: a start this close to now
# is "now"; an older one is a mistake about the term, not a backdated contract.
MAX_START_IN_PAST = timedelta(minutes=5)
# Reservations that still hold their units against a new one.
_HOLDING = frozenset(
    {ReservationStatus.PENDING, ReservationStatus.ACTIVE, ReservationStatus.NEEDS_REVIEW}
)

Term = tuple[datetime, datetime | None]
# (unit id, why) for a unit a reservation may not take or keep, as nodes' rules say it too.
UnitReason = tuple[str, str]


def new_term(starts_at: datetime | None, ends_at: datetime | None, now: datetime) -> Term:
    """The term to store (to the second, as stored); 400 naming the field that is wrong.
    A term shorter than a second is refused as such: kept to the second, it would be none."""
    starts = (starts_at or now).replace(microsecond=0)
    ends = ends_at.replace(microsecond=0) if ends_at is not None else None
    if starts < now - MAX_START_IN_PAST:
        raise InvalidRequest(
            "startsAt is more than 5 minutes in the past",
            [FieldProblem("startsAt", "must not be more than 5 minutes in the past")],
        )
    if ends_at is not None and (problem := term_problem(starts_at or now, ends_at)):
        raise InvalidRequest(f"endsAt {problem}", [FieldProblem("endsAt", problem)])
    if ends is not None and ends <= now:  # a term already over would promise nothing
        raise InvalidRequest(
            "endsAt is not in the future", [FieldProblem("endsAt", "must be in the future")]
        )
    return starts, ends


def initial_status(starts_at: datetime, now: datetime) -> ReservationStatus:
    """Stored ``active`` once its term has begun, ``pending`` before."""
    return ReservationStatus.ACTIVE if starts_at <= now else ReservationStatus.PENDING


def overlaps(term: Term, reservation: Reservation) -> bool:
    """Whether two terms share a moment; an absent end overlaps everything after its start."""
    starts, ends = term
    return (reservation.ends_at is None or starts < reservation.ends_at) and (
        ends is None or reservation.starts_at < ends
    )


def not_reservable(snapshot: NodeSnapshot, unit_ids: Sequence[str]) -> list[UnitReason]:
    """Units not on the node, or not reservable (the reason list units shows)."""
    units = {unit.id: unit for unit in snapshot.units}
    refusals = []
    for unit_id in unit_ids:
        unit = units.get(unit_id)
        reason = "unit is not on this node" if unit is None else not_reservable_reason(unit)
        if reason is not None:
            refusals.append((unit_id, reason))
    return refusals


def unavailable(
    snapshot: NodeSnapshot,
    unit_ids: Sequence[str],
    term: Term,
    allowed_org_ids: Sequence[str],
    now: datetime,
) -> list[UnitReason]:
    """Units held by an overlapping pending/active/needs-review reservation, or — when the
    term includes now — claimed by a workload of an org outside the audience."""
    includes_now = term[0] <= now
    refusals = []
    for unit_id in unit_ids:
        why = _held(unit_id, snapshot, term, now)
        if why is None and includes_now:
            why = _claimed(unit_id, snapshot, allowed_org_ids)
        if why is not None:
            refusals.append((unit_id, why))
    return refusals


def held(
    snapshot: NodeSnapshot, unit_ids: Sequence[str], term: Term, now: datetime
) -> list[UnitReason]:
    """Units held by an overlapping pending/active/needs-review reservation (no claim
    counts: for units a reservation keeps while its term grows)."""
    return [(u, why) for u in unit_ids if (why := _held(u, snapshot, term, now)) is not None]


def _held(unit_id: str, snapshot: NodeSnapshot, term: Term, now: datetime) -> str | None:
    """The first (by id) reservation of the unit whose term overlaps and that holds it; the
    cheap tests first (a fleet file's node may carry thousands of reservations)."""
    overlapping = [
        r for r in snapshot.reservations if unit_id in r.reserved_unit_ids and overlaps(term, r)
    ]
    for reservation in sorted(overlapping, key=lambda r: r.id):
        status = effective_status(reservation, snapshot.node, now)
        if status in _HOLDING:
            until = f" until {format_time(reservation.ends_at)}" if reservation.ends_at else ""
            return f"held by reservation {reservation.id} ({status.value}){until}"
    return None


def _claimed(unit_id: str, snapshot: NodeSnapshot, allowed_org_ids: Sequence[str]) -> str | None:
    unit = next((u for u in snapshot.units if u.id == unit_id), None)
    if unit is None or unit.claimed_by is None:
        return None
    holder = next((w for w in snapshot.workloads if w.claim == unit.claimed_by), None)
    if holder is not None and holder.org_id in allowed_org_ids:
        return None  # the audience's own workload may stay on its reservation
    return f"claimed by {unit.claimed_by} of an org outside allowedOrgIds"
