"""What the node and workload reads get from the store."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from reservations.nodes.models.partition import ListAccess, Workload, WorkloadUse


@dataclass(frozen=True, slots=True)
class WorkloadsRead:
    """A node's live workloads in id order, read with its list access item, which names
    the node's owner (None: no such node)."""

    access: ListAccess | None
    workloads: tuple[Workload, ...]


@dataclass(frozen=True, slots=True)
class EndedWorkload:
    """A workload that left the node (ended, or reported stopped), as its latest history item
    keeps it: the workload as it was, its own use, and until when it may be read
    (``HistoryRetentionDays`` after it left; the table's TTL deletes it some time after)."""

    workload: Workload
    use: WorkloadUse
    retained_until: datetime

    def retained_at(self, now: datetime) -> bool:
        return now < self.retained_until
