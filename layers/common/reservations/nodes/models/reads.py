"""What the node and workload reads get from the store."""

from __future__ import annotations

from dataclasses import dataclass

from reservations.nodes.models.partition import ListAccess, Workload


@dataclass(frozen=True, slots=True)
class WorkloadsRead:
    """A node's live workloads in id order, read with its list access item, which names
    the node's owner (None: no such node)."""

    access: ListAccess | None
    workloads: tuple[Workload, ...]
