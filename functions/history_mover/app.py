"""Lambda entry point for the scheduled history mover: expired reservations leave their
node's partition for its history."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from reservations.kernel.observability import SCHEDULED_EVENT, logger
from reservations.kernel.wiring import entry_point
from reservations.lifecycle.history_mover import move_expired
from reservations.lifecycle.wiring import reservation_ports

ports = reservation_ports()  # clients are made on first use, never at import


@entry_point(SCHEDULED_EVENT)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    counts = move_expired(ports, time_left=lambda: context.get_remaining_time_in_millis() / 1000)
    logger.info("history moves done", extra=dict(counts))
    return {str(outcome): count for outcome, count in counts.items()}
