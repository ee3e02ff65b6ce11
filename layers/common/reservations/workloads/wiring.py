"""The workloads slice's real ports: the node table committing its writes, the clock, and
the batch send of a take-back's terminations to the node's queue."""

from __future__ import annotations

from reservations.kernel.clock import utc_now
from reservations.nodes import node_table
from reservations.terminations import send_terminations
from reservations.workloads.ports import WorkloadPorts
from reservations.workloads.table import WRITERS


def workload_ports() -> WorkloadPorts:
    return WorkloadPorts(
        store=node_table(*WRITERS), clock=utc_now, send_terminations=send_terminations
    )
