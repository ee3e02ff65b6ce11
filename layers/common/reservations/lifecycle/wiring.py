"""The lifecycle slice's real ports: the node table committing its writes, and the clock."""

from __future__ import annotations

from typing import Any

from reservations.kernel.clock import utc_now
from reservations.lifecycle.table import WRITERS
from reservations.nodes import NodePorts, node_table


def reservation_ports(**overrides: Any) -> NodePorts:
    """``overrides``: a function's own (a create's reservation ids)."""
    real: dict[str, Any] = {"store": node_table(*WRITERS), "clock": utc_now}
    return NodePorts(**(real | overrides))
