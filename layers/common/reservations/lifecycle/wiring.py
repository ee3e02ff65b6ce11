"""The lifecycle slice's real ports: the node table committing its writes, and the clock."""

from __future__ import annotations

from typing import Any

from reservations.lifecycle.table import WRITERS
from reservations.nodes import NodePorts, node_ports


def reservation_ports(**overrides: Any) -> NodePorts:
    """``overrides``: a function's own (a create's reservation ids)."""
    return node_ports(*WRITERS, **overrides)
