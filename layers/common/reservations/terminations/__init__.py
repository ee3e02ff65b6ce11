"""The terminations slice: the outbox and its queues, a node's reports, the sweeper.

What other slices may use of it: they import it from here, never from its modules."""

from __future__ import annotations

from reservations.terminations.outbox import send_committed
from reservations.terminations.ports import BatchSender
from reservations.terminations.rules.delivery import freed_units
from reservations.terminations.rules.events import termination_requested
from reservations.terminations.table.queues import send_terminations

__all__ = [
    "BatchSender",
    "freed_units",
    "send_committed",
    "send_terminations",
    "termination_requested",
]
