"""What a PATCH may change on a reservation as stored, and the reservation it leaves (pure:
the clock is passed in).

The body's own checks are the 400s (``reservations.models``); what needs the stored
reservation is 409 ``reservation_not_changeable`` naming the field; what needs the node's
other reservations and workloads is 409 ``units_unavailable``; units it does not hold, or
that are not reservable, are the 422s. In that order (409 before 422)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from pydantic.alias_generators import to_camel

from reservations.kernel.envelope import optional_time
from reservations.kernel.errors import FieldProblem
from reservations.kernel.times import term_problem
from reservations.lifecycle.errors import (
    ReservationNotChangeable,
    UnitsNotInReservation,
    UnitsNotReservable,
)
from reservations.lifecycle.models import UpdateReservationRequest
from reservations.lifecycle.rules.term import (
    Term,
    UnitReason,
    held,
    initial_status,
    not_reservable,
    unavailable,
)
from reservations.nodes import (
    MAX_UNITS,
    LendingPolicy,
    NodeSnapshot,
    Reservation,
    ReservationStatus,
    UnitsUnavailable,
    effective_status,
)

# What a PATCH may change: a reservation still to come or running; one under review is
# re-affirmed first, one that ended is over.
CHANGEABLE = frozenset({ReservationStatus.PENDING, ReservationStatus.ACTIVE})

UpdateRefusal = (
    ReservationNotChangeable | UnitsUnavailable | UnitsNotInReservation | UnitsNotReservable
)


def _not_changeable(message: str, field: str, problem: str) -> ReservationNotChangeable:
    return ReservationNotChangeable(message, [FieldProblem(field, problem)])


def updated(
    snapshot: NodeSnapshot,
    reservation: Reservation,
    body: UpdateReservationRequest,
    now: datetime,
) -> Reservation | UpdateRefusal:
    """The reservation as the PATCH leaves it (unchanged when it changes nothing), or its
    refusal."""
    status = effective_status(reservation, snapshot.node, now)
    if status not in CHANGEABLE:
        return _not_changeable(
            f"reservation {reservation.id} is {status.value}", "status", f"is {status.value}"
        )
    term = _term(reservation, body, status)
    if isinstance(term, ReservationNotChangeable):
        return term
    units = _units(reservation, body)
    if not isinstance(units, tuple):
        return units
    refusal = _unavailable(snapshot, reservation, body, term, now) or _not_reservable(
        snapshot, body
    )
    if refusal is not None:
        return refusal
    return _after(snapshot, reservation, body, term, units, now)


def _term(
    reservation: Reservation, body: UpdateReservationRequest, status: ReservationStatus
) -> Term | ReservationNotChangeable:
    """The new term (to the second, as stored); ``startsAt`` only while pending, and an end
    after the start, whichever of them moved."""
    starts, ends = reservation.starts_at, reservation.ends_at
    given_starts, given_ends = body.term()
    if body.given("startsAt") and given_starts is not None:
        if status is not ReservationStatus.PENDING:
            return _not_changeable(
                f"reservation {reservation.id} is active: its startsAt cannot move",
                "startsAt",
                "can only change while the reservation is pending",
            )
        starts = given_starts.replace(microsecond=0)
    if body.given("endsAt"):
        ends = None if given_ends is None else given_ends.replace(microsecond=0)
    if ends is not None and (problem := term_problem(starts, ends)):
        field = "endsAt" if body.given("endsAt") else "startsAt"
        return _not_changeable(
            f"endsAt {problem}", field, f"the term would end at or before it starts: {problem}"
        )
    return starts, ends


def _units(
    reservation: Reservation, body: UpdateReservationRequest
) -> tuple[str, ...] | ReservationNotChangeable | UnitsNotInReservation:
    """The units after the change: 409 for adding one it holds, removing every one, or more
    than 32; then 422 for removing one it does not hold."""
    held = reservation.reserved_unit_ids
    added = body.add_unit_ids or []
    removed = body.remove_unit_ids or []
    for index, unit_id in enumerate(added):
        if unit_id in held:
            return _not_changeable(
                f"reservation {reservation.id} already holds {unit_id}",
                f"addUnitIds[{index}]",
                f"{unit_id} is already in reservedUnitIds",
            )
    kept = [u for u in held if u not in removed]
    if removed and not kept and not added:
        return _not_changeable(
            "a reservation keeps at least one unit",
            "removeUnitIds",
            "would remove every unit of the reservation",
        )
    after = tuple(sorted({*kept, *added}))
    if len(after) > MAX_UNITS:
        return _not_changeable(
            f"a reservation holds at most {MAX_UNITS} units",
            "addUnitIds",
            f"would make {len(after)} units (at most {MAX_UNITS})",
        )
    if foreign := [u for u in removed if u not in held]:
        return UnitsNotInReservation(
            f"units not in reservation {reservation.id}: " + ", ".join(foreign),
            [
                FieldProblem(f"removeUnitIds[{removed.index(u)}]", f"{u} is not reserved")
                for u in foreign
            ],
        )
    return after


def _unavailable(
    snapshot: NodeSnapshot,
    reservation: Reservation,
    body: UpdateReservationRequest,
    term: Term,
    now: datetime,
) -> UnitsUnavailable | None:
    """409 for an added unit held by another live reservation over the new term, or (while
    the term includes now) claimed by a workload of an org outside the new audience; and for
    a kept unit held by another over the time the change adds to the term (a shortening
    adds none, so never fails)."""
    others = replace(
        snapshot, reservations=tuple(r for r in snapshot.reservations if r.id != reservation.id)
    )
    audience = body.allowed_org_ids or list(reservation.allowed_org_ids)
    added = body.add_unit_ids or []
    refusals = [
        (f"addUnitIds[{added.index(unit_id)}]", unit_id, why)
        for unit_id, why in unavailable(others, added, term, audience, now)
    ]
    kept = [u for u in reservation.reserved_unit_ids if u not in (body.remove_unit_ids or [])]
    field = "startsAt" if term[0] < reservation.starts_at else "endsAt"
    for window in _extensions(reservation, term):
        # Only overlap counts here: the kept units' claims are the reservation's own matter.
        refusals += [(field, unit_id, why) for unit_id, why in held(others, kept, window, now)]
    if not refusals:
        return None
    named = ", ".join(dict.fromkeys(unit_id for _, unit_id, _ in refusals))
    return UnitsUnavailable(
        f"units unavailable: {named}",
        [FieldProblem(at, f"{unit_id}: {why}") for at, unit_id, why in refusals],
    )


def _extensions(reservation: Reservation, term: Term) -> list[Term]:
    """The stretches of time the new term covers that the old one did not."""
    starts, ends = term
    windows: list[Term] = []
    if starts < reservation.starts_at:
        windows.append((starts, reservation.starts_at))
    old_end = reservation.ends_at
    if old_end is not None and (ends is None or ends > old_end):
        windows.append((old_end, ends))
    return windows


def _not_reservable(
    snapshot: NodeSnapshot, body: UpdateReservationRequest
) -> UnitsNotReservable | None:
    added = body.add_unit_ids or []
    refused: list[UnitReason] = not_reservable(snapshot, added)
    if not refused:
        return None
    return UnitsNotReservable(
        "units not reservable: " + ", ".join(u for u, _ in refused),
        [FieldProblem(f"addUnitIds[{added.index(u)}]", f"{u}: {why}") for u, why in refused],
    )


def _after(
    snapshot: NodeSnapshot,
    reservation: Reservation,
    body: UpdateReservationRequest,
    term: Term,
    units: tuple[str, ...],
    now: datetime,
) -> Reservation:
    """The reservation with the body's changes; as it was when they change nothing."""
    status = reservation.status
    if term[0] != reservation.starts_at:  # only while pending: it may begin now
        status = initial_status(term[0], now)
    changed = replace(
        reservation,
        status=status,
        starts_at=term[0],
        ends_at=term[1],
        allowed_org_ids=_listed(body.allowed_org_ids, reservation.allowed_org_ids),
        managing_org_ids=_listed(body.managing_org_ids, reservation.managing_org_ids),
        reserved_unit_ids=units,
        released_unit_ids=tuple(u for u in reservation.released_unit_ids if u in units),
        contract_ref=body.contract_ref if body.given("contractRef") else reservation.contract_ref,
        reason=body.reason if body.given("reason") else reservation.reason,
        # A unit added is sold on the node's topology as it is now (the units it held are
        # unchanged since theirs, or it would be under review).
        topology_gen=(
            snapshot.node.topology_gen
            if set(units) - set(reservation.reserved_unit_ids)
            else reservation.topology_gen
        ),
    )
    if not changes(reservation, changed):
        return reservation
    return replace(changed, updated_at=now.replace(microsecond=0), version=reservation.version + 1)


def _listed(given: Sequence[str] | None, stored: tuple[str, ...]) -> tuple[str, ...]:
    return stored if given is None else tuple(given)


# The reservation object's fields a PATCH may change, as its event names them.
_FIELDS = (
    ("startsAt", lambda r: r.starts_at),
    ("endsAt", lambda r: r.ends_at),
    ("allowedOrgIds", lambda r: list(r.allowed_org_ids)),
    ("managingOrgIds", lambda r: list(r.managing_org_ids)),
    ("reservedUnitIds", lambda r: sorted(r.reserved_unit_ids)),
    ("releasedUnitIds", lambda r: sorted(r.released_unit_ids)),
    ("contractRef", lambda r: r.contract_ref),
    ("reason", lambda r: r.reason),
    ("lending", lambda r: r.lending),
)


def changes(before: Reservation, after: Reservation) -> dict[str, dict[str, object]]:
    """Each field of the reservation object that differs, ``{"from", "to"}`` (times as
    RFC 3339; None for absent)."""
    found: dict[str, dict[str, Any]] = {}
    for name, value in _FIELDS:
        old, new = _shown(value(before)), _shown(value(after))
        if old != new:
            found[name] = {"from": old, "to": new}
    return found


def _shown(value: object) -> object:
    """A value as the reservation object shows it: a time as RFC 3339, a lending policy as
    its object."""
    if isinstance(value, LendingPolicy):
        return {to_camel(name): getattr(value, name) for name in LendingPolicy.__slots__}
    return optional_time(value) if isinstance(value, datetime) else value


def removed_orgs(before: Reservation, after: Reservation) -> dict[str, list[str]]:
    """Each org the change no longer names at all, with the lists it left."""
    still = {*after.allowed_org_ids, *after.managing_org_ids}
    left: dict[str, list[str]] = {}
    for name, was, now in (
        ("allowedOrgIds", before.allowed_org_ids, after.allowed_org_ids),
        ("managingOrgIds", before.managing_org_ids, after.managing_org_ids),
    ):
        for org in was:
            if org not in now and org not in still:
                left.setdefault(org, []).append(name)
    return left
