"""Ports for tests: every slice's at once, real or swapped in a loaded function."""

from __future__ import annotations

import dataclasses
from types import ModuleType
from typing import Any

import pytest

from reservations.capacity.ports import CapacityPorts
from reservations.capacity.table import WRITERS as RECLAIMS
from reservations.kernel.clock import utc_now
from reservations.lifecycle.table import WRITERS as RESERVATION_WRITES
from reservations.nodes.ports import RegisterPorts
from reservations.nodes.table.queue import make_node_queue
from reservations.nodes.table.store import NodeTable
from reservations.nodes.wiring import node_table
from reservations.terminations.ports import TerminationPorts
from reservations.terminations.table.queues import send_termination, send_terminations
from reservations.terminations.table.store import WRITERS as CLOSES
from reservations.terminations.table.store import TerminationTable
from reservations.webhooks.ports import WebhookPorts
from reservations.webhooks.table.deliveries import DeliveryQueue
from reservations.webhooks.table.subscriptions import SubscriptionTable
from reservations.workloads.table import WRITERS as WORKLOAD_WRITES


def swap_ports(monkeypatch: pytest.MonkeyPatch, module: ModuleType, **changes: Any) -> None:
    """Replace some of a loaded function's ports for the test: its API function's, or the
    module's own (the sweeper's, the reports')."""
    holder = getattr(module, "function", module)
    monkeypatch.setattr(holder, "ports", dataclasses.replace(holder.ports, **changes))


@dataclasses.dataclass(frozen=True, kw_only=True)
class AllPorts(RegisterPorts, CapacityPorts, TerminationPorts, WebhookPorts):
    """Every slice's ports at once: what a test hands to any use case (each takes the part
    its slice declares)."""


def every_writer_table() -> NodeTable:
    """The node table committing every slice's writes, as the functions' tables together do."""
    return node_table(*RECLAIMS, *RESERVATION_WRITES, *CLOSES, *WORKLOAD_WRITES)


def real_ports(**overrides: Any) -> AllPorts:
    """Every slice's real ports (the table, the queues, the clock): a moto test's."""
    real: dict[str, Any] = {
        "store": every_writer_table(),
        "terminations": TerminationTable(),
        "clock": utc_now,
        "send_terminations": send_terminations,
        "send_termination": send_termination,
        "make_queue": make_node_queue,
        "webhooks": SubscriptionTable(),
        "queue_delivery": DeliveryQueue().send,
    }
    return AllPorts(**(real | overrides))
