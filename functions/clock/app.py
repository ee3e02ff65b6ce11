"""Lambda entry point for the scheduled clock: reservation.activated, .expiring and
.expired, each written once at its moment; then the lending pass, which lends the idle
units of reservations whose lending policy has ``auto`` on."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from reservations.capacity import capacity_ports, run_lending
from reservations.kernel.observability import SCHEDULED_EVENT, logger
from reservations.kernel.wiring import entry_point
from reservations.lifecycle.clock import run_clock

# The node table with the clock's writes and the lending pass's; clients are made on first
# use, never at import.
ports = capacity_ports()


@entry_point(SCHEDULED_EVENT)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    def time_left() -> float:
        return context.get_remaining_time_in_millis() / 1000

    counts = run_clock(ports, time_left=time_left)
    logger.info("clock pass done", extra=dict(counts))
    lent = run_lending(ports, time_left=time_left)
    logger.info("lending pass done", extra=dict(lent))
    answer = {str(outcome): count for outcome, count in counts.items()}
    return {**answer, **{f"lending.{outcome}": count for outcome, count in lent.items()}}
