"""Where the platform's scheduler may place a workload: which units are open to whom, now.

One table decides it, per unit, from the reservations that hold the unit:

- an ``active`` reservation inside its term governs it: open to its audience at any tier,
  to anyone else at tier ``spot`` only while the unit is in ``releasedUnitIds``;
- a ``needs-review`` reservation withholds it from everybody (while its term lasts: an
  ended review is expired and governs nothing);
- no reservation governs it now, but a ``pending`` one holds it later (a stored ``active``
  one whose term has not started counts as such): open to the audience of each at any
  tier, to anyone else at tier ``spot`` only;
- nothing holds it: open to anyone, at any tier.

Tier ``reserved`` also needs every unit governed by an active reservation whose audience
holds the workload's org. A unit must be free, whatever the table says.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from reservations.kernel.times import format_time
from reservations.nodes import (
    Node,
    NodeSnapshot,
    Reservation,
    ReservationStatus,
    Tier,
    Unit,
    effective_status,
    in_term,
)


@dataclass(frozen=True, slots=True)
class PlacementRefusal:
    """A named unit the workload may not have, and why, in words a person understands."""

    unit_id: str
    reason: str


def not_sellable(unit_ids: Sequence[str], units: Iterable[Unit]) -> list[PlacementRefusal]:
    """The named units that are not on the node, or not sellable (a 422 when any)."""
    by_id = {unit.id: unit for unit in units}
    refusals = []
    for unit_id in unit_ids:
        unit = by_id.get(unit_id)
        if unit is None:
            refusals.append(PlacementRefusal(unit_id, "unit is not on this node"))
        elif not unit.sellable:
            why = f": {unit.not_sellable_reason}" if unit.not_sellable_reason else ""
            refusals.append(PlacementRefusal(unit_id, f"unit is not sellable{why}"))
    return refusals


def unavailable(
    snapshot: NodeSnapshot,
    unit_ids: Sequence[str],
    org_id: str,
    tier: Tier,
    now: datetime,
) -> list[PlacementRefusal]:
    """The named units of the node that are claimed, or not open to ``org_id`` at ``tier``
    now (a 409 when any); units not on the node are left to :func:`not_sellable`."""
    by_id = {unit.id: unit for unit in snapshot.units}
    refusals = []
    for unit_id in unit_ids:
        unit = by_id.get(unit_id)
        if unit is None:
            continue
        reason = _claimed(unit) or unit_refusal(unit_id, snapshot, org_id, tier, now)
        if reason is not None:
            refusals.append(PlacementRefusal(unit_id, reason))
    return refusals


def _claimed(unit: Unit) -> str | None:
    """A unit claimed, or held for a waiting workload (a take-back's), is nobody else's."""
    if unit.held_for:
        return f"unit is held for {unit.held_for}"
    return f"unit is claimed by {unit.claimed_by}" if unit.claimed_by else None


def unit_refusal(
    unit_id: str, snapshot: NodeSnapshot, org_id: str, tier: Tier, now: datetime
) -> str | None:
    """Why the (free) unit is not open to ``org_id`` at ``tier`` now; None when it is."""
    node = snapshot.node
    holding = sorted(
        (r for r in snapshot.reservations if unit_id in r.reserved_unit_ids), key=_by_id
    )
    governing = [r for r in holding if _governs(r, node, now)]
    if governing:
        return _governed_refusal(governing[0], node, unit_id, org_id, tier, now)
    if tier is Tier.RESERVED:
        return "tier reserved needs an active reservation of this org governing the unit"
    for later in (r for r in holding if _holds_later(r, node, now)):
        if tier is not Tier.SPOT and org_id not in later.allowed_org_ids:
            return (
                f"reservation {later.id} holds the unit from {format_time(later.starts_at)}: "
                "only its audience may place there, others only at tier spot"
            )
    return None


def _governed_refusal(
    reservation: Reservation,
    node: Node,
    unit_id: str,
    org_id: str,
    tier: Tier,
    now: datetime,
) -> str | None:
    if effective_status(reservation, node, now) is ReservationStatus.NEEDS_REVIEW:
        return f"reservation {reservation.id} is under review: the unit is withheld"
    if org_id in reservation.allowed_org_ids:
        return None
    if tier is Tier.RESERVED:
        return f"tier reserved needs this org in the audience of reservation {reservation.id}"
    if tier is not Tier.SPOT:
        return f"reservation {reservation.id} holds the unit: others may place only at tier spot"
    if unit_id not in reservation.released_unit_ids:
        return f"reservation {reservation.id} has not released the unit to the spot market"
    return None


def _governs(reservation: Reservation, node: Node, now: datetime) -> bool:
    """Active inside its term, or under review (which withholds the unit)."""
    status = effective_status(reservation, node, now)
    if status is ReservationStatus.NEEDS_REVIEW:
        return True
    return status is ReservationStatus.ACTIVE and in_term(reservation, now)


def _holds_later(reservation: Reservation, node: Node, now: datetime) -> bool:
    """Pending, or stored active with a term that has not started: it holds the unit later."""
    status = effective_status(reservation, node, now)
    return status in (
        ReservationStatus.PENDING,
        ReservationStatus.ACTIVE,
    ) and not in_term(reservation, now)


def reservations_read(
    snapshot: NodeSnapshot, unit_ids: Sequence[str], now: datetime
) -> list[Reservation]:
    """The reservations the write conditions on: those governing a named unit now, whose
    writes could close a unit the decision found open (a reclaim takes units back; a unit
    under review is withheld until a re-affirm). No others can: an ended one never governs
    again, and one that holds a unit only later changes before its start by a cancel alone,
    which only opens units; a create or a node update moves the node's version, on which
    the write conditions too. So the write stays small however long the units' history."""
    named = set(unit_ids)
    return sorted(
        (
            r
            for r in snapshot.reservations
            if named.intersection(r.reserved_unit_ids) and _governs(r, snapshot.node, now)
        ),
        key=_by_id,
    )


def _by_id(reservation: Reservation) -> str:
    return reservation.id
