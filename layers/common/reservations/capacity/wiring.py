"""The capacity slice's real ports: the node table, the clock and the batch send of a
reclaim's terminations to the node's queue."""

from __future__ import annotations

from reservations.capacity.ports import CapacityPorts
from reservations.kernel.clock import utc_now
from reservations.nodes.table.store import NodeTable
from reservations.terminations.table.queues import send_terminations


def capacity_ports() -> CapacityPorts:
    return CapacityPorts(store=NodeTable(), clock=utc_now, send_terminations=send_terminations)
