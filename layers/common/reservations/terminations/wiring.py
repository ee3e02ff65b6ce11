"""The terminations slice's real ports: the node table, the open terminations, the single
send and the clock."""

from __future__ import annotations

from reservations.kernel.clock import utc_now
from reservations.nodes.table.store import NodeTable
from reservations.terminations.ports import TerminationPorts
from reservations.terminations.table.queues import send_termination
from reservations.terminations.table.store import TerminationTable


def termination_ports() -> TerminationPorts:
    return TerminationPorts(
        store=NodeTable(),
        clock=utc_now,
        terminations=TerminationTable(),
        send_termination=send_termination,
    )
