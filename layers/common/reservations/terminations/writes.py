"""A node's report closing a termination, as a write on its partition, in domain terms (no
table layout; ``terminations.table.store`` commits it)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from reservations.kernel.writes import ItemVersion
from reservations.nodes import EventedWrite, Workload


@dataclass(frozen=True, slots=True)
class TerminationClose(EventedWrite):
    """A report closing a termination: the workload leaves the node for its history, and
    the units it still holds are freed."""

    node_id: str
    workload: Workload
    termination_id: str
    outcome: str
    freed_units: tuple[ItemVersion, ...]
    at: datetime
