"""The terminations slice's real ports: the node table, the open terminations, the single
send and the clock."""

from __future__ import annotations

from reservations.kernel.clock import utc_now
from reservations.nodes import node_table
from reservations.terminations.ports import TerminationPorts
from reservations.terminations.table.queues import send_termination
from reservations.terminations.table.store import WRITERS, TerminationTable


def termination_ports() -> TerminationPorts:
    return TerminationPorts(
        store=node_table(*WRITERS),
        clock=utc_now,
        terminations=TerminationTable(),
        send_termination=send_termination,
    )
