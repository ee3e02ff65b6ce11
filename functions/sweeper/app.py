"""Lambda entry point for the scheduled sweeper of open terminations."""

from datetime import timedelta
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from reservations.clock import utc_now
from reservations.config import settings
from reservations.dal.queues import send_termination
from reservations.dal.terminations import TerminationStore
from reservations.logic.sweeper import sweep
from reservations.rules.terminations import RedeliveryPolicy

logger = Logger()
metrics = Metrics()
tracer = Tracer()


def policy() -> RedeliveryPolicy:
    """The sweeper's pace, from the stack's parameters."""
    config = settings()
    return RedeliveryPolicy(
        grace=timedelta(seconds=config.sweeper_grace_seconds),
        confirm_deadline=timedelta(seconds=config.confirm_deadline_seconds),
        stuck_resend=timedelta(seconds=config.stuck_resend_seconds),
        max_deliveries=config.max_deliveries,
    )


@logger.inject_lambda_context
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    counts = sweep(utc_now(), policy(), TerminationStore(), send_termination)
    logger.info("sweep done", extra=dict(counts))
    return dict(counts)
