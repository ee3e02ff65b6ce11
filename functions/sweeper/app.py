"""Lambda entry point for the scheduled sweeper of open terminations."""

from datetime import timedelta
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from reservations.kernel.observability import SCHEDULED_EVENT, logger
from reservations.kernel.wiring import entry_point
from reservations.terminations.rules.delivery import RedeliveryPolicy
from reservations.terminations.settings import settings
from reservations.terminations.sweeper import sweep
from reservations.terminations.wiring import termination_ports

ports = termination_ports()  # clients are made on first use, never at import


def policy() -> RedeliveryPolicy:
    """The sweeper's pace, from the stack's parameters."""
    config = settings()
    return RedeliveryPolicy(
        grace=timedelta(seconds=config.sweeper_grace_seconds),
        confirm_deadline=timedelta(seconds=config.confirm_deadline_seconds),
        stuck_resend=timedelta(seconds=config.stuck_resend_seconds),
        max_deliveries=config.max_deliveries,
    )


@entry_point(SCHEDULED_EVENT)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    counts = sweep(
        ports.clock(),
        policy(),
        ports.terminations,
        ports.send_termination,
        time_left=lambda: context.get_remaining_time_in_millis() / 1000,
    )
    logger.info("sweep done", extra=dict(counts))
    return dict(counts)
