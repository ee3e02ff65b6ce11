"""What a reclaim of some units of a reservation does, decided from one node snapshot."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime

from reservations.nodes import (
    CLAIMING_STATES,
    NodeSnapshot,
    Reservation,
    Tier,
    Unit,
    Workload,
    WorkloadState,
    termination_of,
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
        if workload.state in CLAIMING_STATES and named.intersection(workload.unit_ids)
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


def moved_earlier(terminating: Iterable[Workload], deadline: datetime) -> tuple[Workload, ...]:
    """The terminations under way that a new reclaim's ``deadline`` moves: each keeps the
    earlier of its own deadline and the new one, so only those due later than ``deadline``
    move (one without a deadline is due at once and never moves)."""
    moved = []
    for workload in terminating:
        due = termination_of(workload).deadline
        if due is not None and due > deadline:
            moved.append(workload)
    return tuple(moved)
