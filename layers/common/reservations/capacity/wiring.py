"""The capacity slice's real ports: the node table, the clock and the batch send of a
reclaim's terminations to the node's queue."""

from __future__ import annotations

from reservations.capacity.ports import CapacityPorts
from reservations.capacity.table import WRITERS
from reservations.kernel.clock import utc_now
from reservations.lifecycle import WRITERS as RESERVATION_WRITERS
from reservations.nodes import node_table
from reservations.terminations import send_terminations


def capacity_ports() -> CapacityPorts:
    """A release is a reservation's change; a reclaim is its own write."""
    store = node_table(*WRITERS, *RESERVATION_WRITERS)
    return CapacityPorts(store=store, clock=utc_now, send_terminations=send_terminations)
