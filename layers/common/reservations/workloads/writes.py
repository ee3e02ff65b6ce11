"""The scheduler's writes on a node's partition, in domain terms (no table layout): a
placement, a workload's end (``workloads.table`` commits them)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from reservations.kernel.writes import ItemVersion
from reservations.nodes import EventedWrite, Workload


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
    termination, if one was open) and frees the units it still holds."""

    write_id: str
    node_id: str
    workload: Workload
    freed_units: tuple[ItemVersion, ...]
    caller_org_id: str
    caller_key_id: str
    at: datetime
