"""What every function's entry point is made of, in one place: the decorator stack every
handler wears, and the real ports its use cases get (the DynamoDB table, the SQS queues,
the clock). Nothing here makes a client: each is made on its first use."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from reservations.kernel.clock import utc_now
from reservations.kernel.observability import logger, metrics, tracer
from reservations.kernel.settings import check_settings
from reservations.nodes.ports import Ports
from reservations.nodes.table.store import NodeTable
from reservations.nodes.table.writes import make_node_queue
from reservations.terminations.table.queues import send_termination, send_terminations
from reservations.terminations.table.store import TerminationTable
from reservations.webhooks.table.deliveries import DeliveryQueue
from reservations.webhooks.table.subscriptions import SubscriptionTable

Handler = Callable[[dict[str, Any], LambdaContext], Any]


def entry_point(correlation_id_path: str) -> Callable[[Handler], Handler]:
    """The stack every function's handler wears: its settings checked, the log's context
    (with the invocation's correlation id), its metrics flushed, and a trace."""

    def wear(handler: Handler) -> Handler:
        traced = tracer.capture_lambda_handler(handler)
        logged = logger.inject_lambda_context(correlation_id_path=correlation_id_path)
        return check_settings(logged(metrics.log_metrics(traced)))

    return wear


def real_ports(**overrides: Any) -> Ports:
    """The table, the queues, an org's webhooks and the clock; ``overrides``: a function's
    own (a create's reservation ids)."""
    real: dict[str, Any] = {
        "store": NodeTable(),
        "terminations": TerminationTable(),
        "clock": utc_now,
        "send_terminations": send_terminations,
        "send_termination": send_termination,
        "make_queue": make_node_queue,
        "webhooks": SubscriptionTable(),
        "queue_delivery": DeliveryQueue().send,
    }
    return Ports(**(real | overrides))
