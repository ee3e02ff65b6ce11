"""Lambda entry point for the termination reports queue (SQS, partial batch failures)."""

from typing import Any

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ConfigDict, Json

from reservations.clock import utc_now
from reservations.config import check_settings
from reservations.dal.table import NodeTable
from reservations.logic.termination_reports import apply_report
from reservations.models.messages import TerminationReport
from reservations.observability import SQS_BATCH, logger, metrics, tracer


class ReportRecord(BaseModel):
    """The two fields of an SQS record this function reads. (Powertools' SqsRecordModel
    would do, but importing its module builds every event source's models: ~50 ms of cold
    start, a third of this function's.)"""

    model_config = ConfigDict(extra="ignore", frozen=True)

    messageId: str  # the batch processor reports failures by this attribute name
    body: Json[TerminationReport]


processor = BatchProcessor(event_type=EventType.SQS, model=ReportRecord)
nodes = NodeTable()  # its client is made on first use, never at import


@tracer.capture_method(capture_response=False)  # a subsegment per use-case call
def record_handler(record: ReportRecord) -> str:
    return apply_report(record.body, utc_now(), nodes)


@check_settings
@logger.inject_lambda_context(correlation_id_path=SQS_BATCH)
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
