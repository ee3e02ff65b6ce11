"""Lambda entry point for the scheduled sweeper of open terminations."""

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from reservations.clock import utc_now
from reservations.logic.sweeper import sweep

logger = Logger()
metrics = Metrics()
tracer = Tracer()


@logger.inject_lambda_context
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    counts = sweep(utc_now())
    logger.info("sweep done", extra=dict(counts))
    return dict(counts)
