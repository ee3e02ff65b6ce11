"""A node's registration or update, decided from what is stored: which units are new,
changed or gone, whether the generation may move, which removed units a workload still
claims, the generation each unit last changed at, and which reservations that puts under
review (derived when read, by ``nodes.rules.status``: the update writes none of them)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from reservations.nodes.models.partition import (
    Node,
    NodeSnapshot,
    Reservation,
    ReservationStatus,
    ReviewScope,
    Unit,
)
from reservations.nodes.rules.status import effective_status
from reservations.nodes.rules.units import UnitReason

# Reservations whose promise a topology change can break: pending or active (a pending one
# will start on the new topology); an ended one is expired and stays so.
_REVIEWED = frozenset({ReservationStatus.PENDING, ReservationStatus.ACTIVE})
_ENDED = frozenset({ReservationStatus.CANCELLED, ReservationStatus.EXPIRED})


def description(unit: Unit) -> tuple[object, ...]:
    """Everything the node reports about a unit: at one generation it must not differ."""
    return (
        unit.alloc_class,
        unit.gpu_model_id,
        unit.gpu_model_name,
        unit.sellable_gpus,
        unit.sellable,
        unit.not_sellable_reason,
    )


def material(unit: Unit) -> tuple[object, ...]:
    """What a reservation was sold: the class, the model, the GPUs, and being sellable.
    A new display name or a new reason wording changes none of it."""
    return (unit.alloc_class, unit.gpu_model_id, unit.sellable_gpus, unit.sellable)


@dataclass(frozen=True)
class TopologyChange:
    """The reported units against the stored ones (stored, reported) for each changed one."""

    added: tuple[Unit, ...]
    changed: tuple[tuple[Unit, Unit], ...]
    removed: tuple[Unit, ...]

    @property
    def none(self) -> bool:
        return not (self.added or self.changed or self.removed)

    @property
    def affected_ids(self) -> frozenset[str]:
        """Units gone, or changed in what a reservation was sold."""
        materially = {new.id for old, new in self.changed if material(old) != material(new)}
        return frozenset({unit.id for unit in self.removed} | materially)


def compare(stored: Iterable[Unit], reported: Sequence[Unit]) -> TopologyChange:
    """What the reported units change against the stored ones (ids already normalised)."""
    before = {unit.id: unit for unit in stored}
    after = {unit.id for unit in reported}
    return TopologyChange(
        added=tuple(u for u in reported if u.id not in before),
        changed=tuple(
            (before[u.id], u)
            for u in reported
            if u.id in before and description(before[u.id]) != description(u)
        ),
        removed=tuple(sorted((u for u in before.values() if u.id not in after), key=_id)),
    )


def stale_reason(stored_gen: int | None, gen: int, change: TopologyChange) -> str | None:
    """Why the update is stale (409), or None: generations only move forward, and one
    generation describes one set of units."""
    if stored_gen is None:
        return None
    if gen < stored_gen:
        return f"topologyGen {gen} is lower than the stored {stored_gen}"
    if gen == stored_gen and not change.none:
        return f"topologyGen {gen} is the stored one, but the units differ"
    return None


def claimed_removals(snapshot: NodeSnapshot, removed: Iterable[Unit]) -> list[UnitReason]:
    """Removed units that a running or terminating workload still holds."""
    holders = {
        unit_id: workload.claim
        for workload in snapshot.workloads
        if workload.claiming
        for unit_id in workload.unit_ids
    }
    refusals = []
    for unit in removed:
        holder = unit.claimed_by or holders.get(unit.id)
        if holder is not None:
            refusals.append((unit.id, f"unit would be removed but is claimed by {holder}"))
    return refusals


def unit_generations(
    snapshot: NodeSnapshot | None, change: TopologyChange, gen: int
) -> dict[str, int]:
    """Each unit of the node after the update, with the generation it last changed at:
    ``gen`` for a unit added, or changed in what a reservation was sold; as stored for the
    others. A node's first units (registered, or loaded from a fleet file) have 0: nothing
    was sold before them. A node item that kept no generations counts its units as 0."""
    if snapshot is None:
        return first_generations(change.added)
    stored = snapshot.node.unit_changed_at or {}
    kept = {unit.id: stored.get(unit.id, 0) for unit in snapshot.units}
    for unit in change.removed:
        del kept[unit.id]
    changed = {unit.id: gen for unit in change.added} | {
        unit_id: gen for unit_id in change.affected_ids if unit_id in kept
    }
    return kept | changed


def first_generations(units: Iterable[Unit]) -> dict[str, int]:
    """A node's units as it is registered (or loaded): none changed since anything was sold."""
    return {unit.id: 0 for unit in units}


def to_review(
    reservations: Iterable[Reservation], before: Node, after: Node, now: datetime
) -> list[Reservation]:
    """The reservations the update puts under review: pending or active on the node as it
    was, ``needs-review`` on the node as the update leaves it (their items are not written:
    every reader derives it from the node's generations)."""
    return sorted(
        (
            r
            for r in reservations
            if effective_status(r, before, now) in _REVIEWED
            and effective_status(r, after, now) is ReservationStatus.NEEDS_REVIEW
        ),
        key=_id,
    )


@dataclass(frozen=True)
class _Generations:
    unit_changed_at: Mapping[str, int] | None


def reviewed_units(scope: ReviewScope, reservation: Reservation, at: datetime) -> list[str]:
    """The units of ``scope`` (a node update's, made at ``at``) that put ``reservation``
    under review, sorted; empty when the update did not: it judges the reservation as
    :func:`to_review` did at the update, from the generations before and after it. One
    ended (cancelled, or stored expired) since the update was live at it; one re-affirmed
    since has the node's newer generation, and is judged reviewed by none."""
    held = sorted(scope.unit_ids.intersection(reservation.reserved_unit_ids))
    if not held:
        return []
    judged = reservation
    if reservation.status in _ENDED and reservation.updated_at > at:
        judged = replace(reservation, status=ReservationStatus.PENDING)
    before = effective_status(judged, _Generations(scope.before), at)
    after = effective_status(judged, _Generations(scope.after), at)
    reviewed = before in _REVIEWED and after is ReservationStatus.NEEDS_REVIEW
    return held if reviewed else []


def _id(item: Unit | Reservation) -> str:
    return item.id
