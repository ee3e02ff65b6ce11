"""What every function's entry point is made of, in one place: the decorator stack every
handler wears. Each slice wires its own real ports (``<slice>/wiring.py``); nothing there
makes a client: each is made on its first use."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from reservations.kernel.observability import logger, metrics, tracer
from reservations.kernel.settings import check_settings

Handler = Callable[[dict[str, Any], LambdaContext], Any]


def entry_point(correlation_id_path: str) -> Callable[[Handler], Handler]:
    """The stack every function's handler wears: its settings checked, the log's context
    (with the invocation's correlation id), its metrics flushed, and a trace."""

    def wear(handler: Handler) -> Handler:
        traced = tracer.capture_lambda_handler(handler)
        logged = logger.inject_lambda_context(correlation_id_path=correlation_id_path)
        return check_settings(logged(metrics.log_metrics(traced)))

    return wear
