"""The terminations slice: the outbox and its queues, a node's reports, the sweeper.

What other slices may use of it: they import it from here, never from its modules."""

from __future__ import annotations

from reservations.terminations.models import OpenTermination
from reservations.terminations.outbox import send_committed
from reservations.terminations.ports import BatchSender
from reservations.terminations.reports import started_events
from reservations.terminations.rules.delivery import freed_units, gpus_held, let_go
from reservations.terminations.rules.events import termination_requested
from reservations.terminations.table.queues import send_terminations
from reservations.terminations.table.store import let_go_actions
from reservations.terminations.writes import HandOver, LetGo

__all__ = [
    "BatchSender",
    "HandOver",
    "LetGo",
    "OpenTermination",
    "freed_units",
    "gpus_held",
    "let_go",
    "let_go_actions",
    "send_committed",
    "send_terminations",
    "started_events",
    "termination_requested",
]
