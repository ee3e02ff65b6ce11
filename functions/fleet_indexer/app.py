"""Lambda entry point for the table's DynamoDB Stream: keeps the fleet index (what
GET /v1/reservations finds reservations by) in step with every reservation's change and
every node's owner (partial batch failures: a record that failed is retried, with those
after it, and applying one twice changes nothing)."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from reservations.kernel.observability import STREAM_BATCH, logger, metrics, tracer
from reservations.kernel.settings import check_settings
from reservations.lifecycle.table.fleet import FleetIndexer


@check_settings
@logger.inject_lambda_context(correlation_id_path=STREAM_BATCH)
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    indexer, applied = FleetIndexer(), 0
    for record in event.get("Records", []):
        try:
            applied += indexer.apply(record)
        except Exception:
            logger.exception("fleet index: a record failed; it and those after it are retried")
            return {"batchItemFailures": [{"itemIdentifier": record["dynamodb"]["SequenceNumber"]}]}
    logger.info("fleet index", extra={"records": len(event.get("Records", [])), "applied": applied})
    return {"batchItemFailures": []}
