"""Lambda entry point for the scheduled sweeper of open terminations."""

from datetime import timedelta
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from reservations.clock import utc_now
from reservations.config import check_settings, settings
from reservations.dal.queues import send_termination
from reservations.dal.terminations import TerminationStore
from reservations.logic.sweeper import sweep
from reservations.observability import SCHEDULED_EVENT, logger, metrics, tracer
from reservations.rules.terminations import RedeliveryPolicy


def policy() -> RedeliveryPolicy:
    """The sweeper's pace, from the stack's parameters."""
    config = settings()
    return RedeliveryPolicy(
        grace=timedelta(seconds=config.sweeper_grace_seconds),
        confirm_deadline=timedelta(seconds=config.confirm_deadline_seconds),
        stuck_resend=timedelta(seconds=config.stuck_resend_seconds),
        max_deliveries=config.max_deliveries,
    )


@check_settings
@logger.inject_lambda_context(correlation_id_path=SCHEDULED_EVENT)
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    counts = sweep(
        utc_now(),
        policy(),
        TerminationStore(),
        send_termination,
        time_left=lambda: context.get_remaining_time_in_millis() / 1000,
    )
    logger.info("sweep done", extra=dict(counts))
    return dict(counts)
