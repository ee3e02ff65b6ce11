"""A node's report closing a termination, as a write on its partition, in domain terms (no
table layout; ``terminations.table.store`` commits it)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from reservations.kernel.writes import ItemVersion
from reservations.nodes import EventedWrite, Workload


@dataclass(frozen=True, slots=True)
class HandOver:
    """A unit held for a waiting workload: the ending workload's claim becomes its
    (``claim``), at the unit's version read, and the hold goes."""

    unit: ItemVersion
    claim: str


@dataclass(frozen=True, slots=True)
class LetGo:
    """What a workload's end does to the units it claims and to the workloads waiting on
    it: units freed, units handed over, and each waiting workload as it leaves it
    (``version`` the one read; running when it waits on nothing more)."""

    freed: tuple[ItemVersion, ...] = ()
    handed: tuple[HandOver, ...] = ()
    waiters: tuple[Workload, ...] = ()


@dataclass(frozen=True, slots=True)
class TerminationClose(EventedWrite):
    """A report closing a termination: the workload leaves the node for its history, the
    units it still holds are freed, or handed over to a workload a take-back holds them for
    (``handed``, ``waiters``: ``terminations.rules.delivery.let_go``); ``gpus``: what its
    units sell as the node states them now, which its own use is counted on."""

    node_id: str
    workload: Workload
    termination_id: str
    outcome: str
    freed_units: tuple[ItemVersion, ...]
    at: datetime
    handed: tuple[HandOver, ...] = ()
    waiters: tuple[Workload, ...] = ()
    gpus: int = 0
