"""Lambda entry point for the termination reports queue (SQS, partial batch failures)."""

from typing import Any

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ConfigDict, Json

from reservations.kernel.observability import SQS_BATCH, tracer
from reservations.kernel.wiring import entry_point
from reservations.terminations.models import TerminationReport
from reservations.terminations.reports import apply_report
from reservations.terminations.wiring import termination_ports


class ReportRecord(BaseModel):
    """The two fields of an SQS record this function reads. (Powertools' SqsRecordModel
    would do, but importing its module builds every event source's models: ~50 ms of cold
    start, a third of this function's.)"""

    model_config = ConfigDict(extra="ignore", frozen=True)

    messageId: str  # the batch processor reports failures by this attribute name
    body: Json[TerminationReport]


processor = BatchProcessor(event_type=EventType.SQS, model=ReportRecord)
ports = termination_ports()  # clients are made on first use, never at import


@tracer.capture_method(capture_response=False)  # a subsegment per use-case call
def record_handler(record: ReportRecord) -> str:
    return apply_report(record.body, ports.clock(), ports.store, ports.terminations)


@entry_point(SQS_BATCH)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
