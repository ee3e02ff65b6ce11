"""Lambda entry point for the scheduled clock: reservation.activated, .expiring and
.expired, each written once at its moment."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from reservations.kernel.observability import SCHEDULED_EVENT, logger
from reservations.kernel.wiring import entry_point
from reservations.lifecycle.clock import run_clock
from reservations.lifecycle.wiring import reservation_ports

ports = reservation_ports()  # clients are made on first use, never at import


@entry_point(SCHEDULED_EVENT)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    counts = run_clock(ports, time_left=lambda: context.get_remaining_time_in_millis() / 1000)
    logger.info("clock pass done", extra=dict(counts))
    return {str(outcome): count for outcome, count in counts.items()}
