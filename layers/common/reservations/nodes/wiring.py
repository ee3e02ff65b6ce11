"""The node slice's real ports: the table and the clock (clients are made on first use). A
slice that writes a node's partition hands the table its own writers."""

from __future__ import annotations

from typing import Any

from reservations.kernel.clock import utc_now
from reservations.nodes.ports import NodePorts, QueueMaker, RegisterPorts
from reservations.nodes.table import writes
from reservations.nodes.table.store import NodeTable, Writer


def node_table(*writers: Writer[Any]) -> NodeTable:
    """The node table, committing the node's own writes and ``writers``'."""
    return NodeTable(*writes.WRITERS, *writers)


def node_ports(*writers: Writer[Any], **overrides: Any) -> NodePorts:
    """A node's partition and the clock; ``overrides``: a function's own (a create's ids)."""
    real: dict[str, Any] = {"store": node_table(*writers), "clock": utc_now}
    return NodePorts(**(real | overrides))


def register_ports(make_queue: QueueMaker) -> RegisterPorts:
    """... and how a registration makes the node's queue (the terminations slice's)."""
    return RegisterPorts(store=node_table(), clock=utc_now, make_queue=make_queue)
