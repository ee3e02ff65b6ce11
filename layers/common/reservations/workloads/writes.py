"""The scheduler's writes on a node's partition, in domain terms (no table layout): a
placement, a workload's end (``workloads.table`` commits them)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from reservations.capacity import ReclaimWrite
from reservations.kernel.writes import ItemVersion
from reservations.nodes import EventedWrite, Workload
from reservations.terminations import HandOver


@dataclass(frozen=True, slots=True)
class PlacementWrite(EventedWrite):
    """A placement: the workload put (no workload of its id on the node), each unit claimed
    at the version read and only while unclaimed, and a version check on the node and on
    every reservation the decision read; its event names the caller."""

    write_id: str
    node: ItemVersion
    workload: Workload
    units: tuple[ItemVersion, ...]
    reservations: tuple[ItemVersion, ...]
    caller_org_id: str
    caller_key_id: str
    at: datetime


@dataclass(frozen=True, slots=True)
class WorkloadEnd(EventedWrite):
    """A workload that stopped on its own: it leaves the node for its history (closing its
    termination, if one was open) and frees the units it still holds; ``gpus``: what its
    units sell as the node states them now, which its own use is counted on."""

    write_id: str
    node_id: str
    workload: Workload
    freed_units: tuple[ItemVersion, ...]
    caller_org_id: str
    caller_key_id: str
    at: datetime
    let_go: EndLetGo | None = None
    gpus: int = 0


@dataclass(frozen=True, slots=True)
class TakeBackPlacement(EventedWrite):
    """A placement with ``reservationId``, one transaction: the placement (its workload
    running or waiting, the free units claimed, the node checked; no reservation of its
    own: the take-back's is the one), the units a spot workload still claims held for the
    workload, and the reclaim of what it takes back (``capacity``'s write: the releases,
    the lending records, the terminations; None when it takes only free, unreleased units:
    then the reservation is only checked at ``reservation``)."""

    placement: PlacementWrite
    held: tuple[ItemVersion, ...]
    reservation: ItemVersion
    take_back: ReclaimWrite | None

    @property
    def workload(self) -> Workload:
        return self.placement.workload

    @property
    def write_id(self) -> str:
        """The write's id (its transaction's token): the placement's."""
        return self.placement.write_id


@dataclass(frozen=True, slots=True)
class EndLetGo:
    """What a workload's end hands over besides freeing units: units held for a waiting
    workload that the ending spot workload claimed (``handed``), each waiting workload as it
    leaves it (``waiters``), and the holds an ending waiting workload drops (``dropped``)."""

    handed: tuple[HandOver, ...] = ()
    waiters: tuple[Workload, ...] = ()
    dropped: tuple[ItemVersion, ...] = ()
