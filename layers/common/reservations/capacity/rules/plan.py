"""What a reclaim of some units of a reservation does, decided from one node snapshot."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from reservations.nodes import (
    NodeSnapshot,
    Reservation,
    Tier,
    Unit,
    Workload,
    WorkloadState,
)


@dataclass(frozen=True)
class ReclaimPlan:
    """The decision, and every item it was read from (the write conditions on all of them)."""

    reservation: Reservation
    unit_ids: tuple[str, ...]
    released_after: tuple[str, ...]
    units: tuple[Unit, ...]
    to_terminate: tuple[Workload, ...]
    already_terminating: tuple[Workload, ...]
    skipped: tuple[Workload, ...]

    @property
    def releases_change(self) -> bool:
        return self.released_after != self.reservation.released_unit_ids

    @property
    def terminated_ids(self) -> list[str]:
        """Workloads the caller is told were terminated: new terminations and ones under way."""
        return sorted(w.id for w in (*self.to_terminate, *self.already_terminating))

    @property
    def skipped_ids(self) -> list[str]:
        return sorted(w.id for w in self.skipped)


def units_outside(reservation: Reservation, unit_ids: Collection[str]) -> list[str]:
    """The named units that are not in ``reservedUnitIds`` (a 422 when any)."""
    return sorted(set(unit_ids) - set(reservation.reserved_unit_ids))


def units_by_count(snapshot: NodeSnapshot, reservation: Reservation, count: int) -> tuple[str, ...]:
    """``count`` of the reservation's released units, chosen as the contract orders them
    (fewer when there are fewer: the caller refuses that): first released units no workload
    claims, by id; then those whose workloads need no new termination (not spot, or already
    terminating), by id; then the units of running spot workloads, the workload holding the
    most of the reservation's released units first (ties: its lowest unit id), its units by
    id. Sorted."""
    released = sorted(set(reservation.released_unit_ids))
    holders = [w for w in snapshot.workloads if w.claiming]
    to_stop = [w for w in holders if w.tier is Tier.SPOT and w.state is WorkloadState.RUNNING]
    claimed = {u for w in holders for u in w.unit_ids}
    needs_stop = {u for w in to_stop for u in w.unit_ids}
    chosen = [u for u in released if u not in claimed]
    chosen += [u for u in released if u in claimed and u not in needs_stop]
    lent = set(released)
    by_size = sorted(
        (w for w in to_stop if lent.intersection(w.unit_ids)),
        key=lambda w: (-len(lent.intersection(w.unit_ids)), min(lent.intersection(w.unit_ids))),
    )
    for spot in by_size:
        chosen += [u for u in sorted(lent.intersection(spot.unit_ids)) if u not in chosen]
    return tuple(sorted(chosen[:count]))


def plan_reclaim(
    snapshot: NodeSnapshot, reservation: Reservation, unit_ids: Collection[str]
) -> ReclaimPlan:
    """Spot workloads holding a named unit are terminated (also when they span an unnamed
    one: a workload cannot lose half its devices); every other tier is skipped; a spot
    workload already terminating counts as terminated and is not messaged again."""
    named = set(unit_ids)
    holders = [
        workload
        for workload in snapshot.workloads
        if workload.claiming and named.intersection(workload.unit_ids)
    ]
    spot = [w for w in holders if w.tier is Tier.SPOT]
    return ReclaimPlan(
        reservation=reservation,
        unit_ids=tuple(sorted(named)),
        released_after=tuple(u for u in reservation.released_unit_ids if u not in named),
        units=tuple(unit for unit in snapshot.units if unit.id in named),
        to_terminate=tuple(w for w in spot if w.state is WorkloadState.RUNNING),
        already_terminating=tuple(w for w in spot if w.state is WorkloadState.TERMINATING),
        skipped=tuple(w for w in holders if w.tier is not Tier.SPOT),
    )
