"""What every function's entry point is made of, in one place: the decorator stack every
handler wears, and the real ports its use cases get (the DynamoDB table, the SQS queues,
the clock). Nothing here makes a client: each is made on its first use."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from reservations.clock import utc_now
from reservations.config import check_settings
from reservations.dal.hook_store import HookTable
from reservations.dal.nodes import make_node_queue
from reservations.dal.queues import send_termination, send_terminations
from reservations.dal.store import NodeTable
from reservations.dal.terminations import TerminationTable
from reservations.dal.webhooks import DeliveryQueue
from reservations.logic.ports import Ports
from reservations.observability import logger, metrics, tracer

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
        "webhooks": HookTable(),
        "queue_delivery": DeliveryQueue().send,
    }
    return Ports(**(real | overrides))
