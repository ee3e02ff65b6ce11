"""The workloads slice's real ports: the node table committing its writes, and the clock."""

from __future__ import annotations

from reservations.nodes import NodePorts, node_ports
from reservations.workloads.table import WRITERS


def workload_ports() -> NodePorts:
    return node_ports(*WRITERS)
