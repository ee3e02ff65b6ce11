"""The node slice's real ports: the table and the clock (clients are made on first use)."""

from __future__ import annotations

from typing import Any

from reservations.kernel.clock import utc_now
from reservations.nodes.ports import NodePorts, QueueMaker, RegisterPorts
from reservations.nodes.table.store import NodeTable


def node_ports(**overrides: Any) -> NodePorts:
    """A node's partition and the clock; ``overrides``: a function's own (a create's ids)."""
    real: dict[str, Any] = {"store": NodeTable(), "clock": utc_now}
    return NodePorts(**(real | overrides))


def register_ports(make_queue: QueueMaker) -> RegisterPorts:
    """... and how a registration makes the node's queue (the terminations slice's)."""
    return RegisterPorts(store=NodeTable(), clock=utc_now, make_queue=make_queue)
