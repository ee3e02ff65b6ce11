"""A placement of the audience's work on a reservation (``reservationId``): which
reservation it acts on, and which of its units the workload gets, taking lent units back
(pure: the node as read, the clock passed in).

Each unit of the reservation stands in one of four ways a take-back may use, in the order
``count`` takes them: free and not released; free and released; claimed by a spot workload
that is already terminating (earliest deadline first); claimed by a running spot workload
(the reclaim's count rule, ``capacity``'s ``units_by_count``: the workload holding the most
of them first). A unit held for a waiting workload, or claimed by the reservation's
audience or by any workload that is not spot, is not the take-back's to give.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import IntEnum

from reservations.capacity import units_by_count
from reservations.lifecycle import ReservationNotActive
from reservations.nodes import (
    NodeSnapshot,
    Reservation,
    ReservationStatus,
    Tier,
    Unit,
    Workload,
    WorkloadState,
    effective_status,
    in_term,
    termination_of,
)
from reservations.workloads.errors import OrgNotInAudience, UnknownReservation
from reservations.workloads.rules.placement import PlacementRefusal

# A termination without a deadline is due at once: it sorts first.
_DUE_AT_ONCE = datetime.min.replace(tzinfo=UTC)


class Standing(IntEnum):
    """How a unit of the reservation may be given, in the order ``count`` takes them."""

    FREE = 1
    FREE_RELEASED = 2
    SPOT_TERMINATING = 3
    SPOT_RUNNING = 4


@dataclass(frozen=True, slots=True)
class TakeBack:
    """What the placement gets: every unit (sorted), those free (claimed at once), those a
    spot workload still claims (held until it stops), and those taken back (released, or
    under spot work: a reclaim of them is part of the write)."""

    reservation: Reservation
    unit_ids: tuple[str, ...]
    claimed: tuple[Unit, ...]
    held: tuple[Unit, ...]
    taken_back: tuple[str, ...]


def acted_on(
    snapshot: NodeSnapshot, reservation_id: str, org_id: str, now: datetime
) -> Reservation | UnknownReservation | ReservationNotActive | OrgNotInAudience:
    """The reservation the placement is the audience's work on: 422 when it is not on the
    node, 409 when its effective status is not ``active`` or its term does not include
    now, 422 when ``org_id`` is not in its audience."""
    reservation = next((r for r in snapshot.reservations if r.id == reservation_id), None)
    if reservation is None or not reservation.retained_at(now):
        return UnknownReservation(f"no reservation {reservation_id} on node {snapshot.node.id}")
    status = effective_status(reservation, snapshot.node, now)
    if status is not ReservationStatus.ACTIVE:
        return ReservationNotActive(f"reservation {reservation.id} is {status.value}")
    if not in_term(reservation, now):
        return ReservationNotActive(f"reservation {reservation.id} is not in its term now")
    if org_id not in reservation.allowed_org_ids:
        return OrgNotInAudience(
            f"org {org_id} is not in the audience of reservation {reservation.id}"
        )
    return reservation


def standing(
    unit: Unit, reservation: Reservation, holders: Mapping[str, Workload]
) -> Standing | str:
    """How the reservation's unit may be given, or why it may not (in words)."""
    if unit.held_for:
        return f"unit is held for {unit.held_for}"
    if unit.claimed_by is None:
        released = unit.id in reservation.released_unit_ids
        return Standing.FREE_RELEASED if released else Standing.FREE
    holder = holders.get(unit.claimed_by)
    if holder is None:
        return f"unit is claimed by {unit.claimed_by}"
    if holder.org_id in reservation.allowed_org_ids:
        return f"unit is claimed by {unit.claimed_by}, work of the reservation's audience"
    if holder.tier is not Tier.SPOT:
        return f"unit is claimed by {unit.claimed_by} at tier {holder.tier.value}: not spot"
    if holder.state is WorkloadState.TERMINATING:
        return Standing.SPOT_TERMINATING
    return Standing.SPOT_RUNNING


def named_refusals(
    snapshot: NodeSnapshot, reservation: Reservation, unit_ids: Sequence[str]
) -> list[PlacementRefusal]:
    """The named units (on the node) the take-back may not give: not the reservation's,
    held, or claimed by work it may not stop (a 409 when any; units not on the node are
    left to ``not_sellable``)."""
    units = {u.id: u for u in snapshot.units}
    holders = _holders(snapshot)
    refusals = []
    for unit_id in unit_ids:
        unit = units.get(unit_id)
        if unit is None:
            continue
        if unit_id not in reservation.reserved_unit_ids:
            refusals.append(
                PlacementRefusal(unit_id, f"unit is not in reservation {reservation.id}")
            )
        elif isinstance(why := standing(unit, reservation, holders), str):
            refusals.append(PlacementRefusal(unit_id, why))
    return refusals


def available_in_order(snapshot: NodeSnapshot, reservation: Reservation) -> list[str]:
    """Every unit the reservation can give now, in the order ``count`` takes them."""
    units = {u.id: u for u in snapshot.units}
    holders = _holders(snapshot)
    ranked: dict[Standing, list[Unit]] = {s: [] for s in Standing}
    for unit_id in sorted(reservation.reserved_unit_ids):
        unit = units.get(unit_id)
        if unit is None or not unit.sellable:
            continue
        if isinstance(rank := standing(unit, reservation, holders), Standing):
            ranked[rank].append(unit)
    terminating = sorted(
        ranked[Standing.SPOT_TERMINATING],
        key=lambda u: (_deadline(holders[u.claimed_by or ""]), u.id),
    )
    running = [u.id for u in ranked[Standing.SPOT_RUNNING]]
    # The reclaim's count rule over the units under running spot work, as if they were all
    # that is released: it orders the workloads, the one holding the most of them first.
    under_spot = replace(reservation, released_unit_ids=tuple(running))
    by_rule = _in_rule_order(snapshot, under_spot, len(running))
    return [
        *(u.id for u in ranked[Standing.FREE]),
        *(u.id for u in ranked[Standing.FREE_RELEASED]),
        *(u.id for u in terminating),
        *by_rule,
    ]


def _in_rule_order(snapshot: NodeSnapshot, reservation: Reservation, n: int) -> list[str]:
    """The units ``units_by_count`` takes for 1, 2, … ``n``, each in the order it joins
    (the rule answers a count with a sorted set: the order is where each first appears)."""
    order: list[str] = []
    for count in range(1, n + 1):
        order += [u for u in units_by_count(snapshot, reservation, count) if u not in order]
    return order


def take_back(
    snapshot: NodeSnapshot, reservation: Reservation, unit_ids: Sequence[str]
) -> TakeBack:
    """The given units (each one the take-back may give) as claimed, held and taken back."""
    units = {u.id: u for u in snapshot.units}
    chosen = [units[u] for u in sorted(set(unit_ids))]
    released = set(reservation.released_unit_ids)
    claimed = tuple(u for u in chosen if u.claimed_by is None)
    held = tuple(u for u in chosen if u.claimed_by is not None)
    return TakeBack(
        reservation=reservation,
        unit_ids=tuple(u.id for u in chosen),
        claimed=claimed,
        held=held,
        taken_back=tuple(u.id for u in chosen if u.id in released or u.claimed_by is not None),
    )


def _holders(snapshot: NodeSnapshot) -> dict[str, Workload]:
    return {w.claim: w for w in snapshot.workloads}


def _deadline(workload: Workload) -> datetime:
    return termination_of(workload).deadline or _DUE_AT_ONCE
