"""Lambda entry point for DELETE /v1/nodes/{nodeId}/workloads/{workloadId} (the platform
scheduler's: the workload stopped on its own)."""

import uuid
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Header
from aws_lambda_powertools.utilities.typing import LambdaContext

from reservations.clock import utc_now
from reservations.config import check_settings
from reservations.dal.table import NodeTable
from reservations.http.openapi import responses
from reservations.http.resolver import create_app, current_caller
from reservations.logic.ports import WorkloadPorts
from reservations.logic.workloads import end_workload
from reservations.observability import API_REQUEST, logger, metrics, tracer

app = create_app()
# The real ports; their clients are made on first use, never at import.
ports = WorkloadPorts(store=NodeTable(), clock=utc_now, new_id=lambda: str(uuid.uuid4()))


@app.delete(
    "/v1/nodes/<nodeId>/workloads/<workloadId>",
    summary="End a workload that stopped on its own: it leaves the node, its units are free",
    operation_id="endWorkload",
    responses=responses(None, "ended (no body)", 400, 401, 404, 409, 422, status=204),
)
@tracer.capture_method(capture_response=False)  # a subsegment per use-case call
def delete_workload(
    nodeId: str,
    workloadId: str,
    idempotency_key: Annotated[
        str | None,
        Header(alias="Idempotency-Key", description="1-255 printable characters; 24 h"),
    ] = None,
) -> Response[str]:
    outcome = end_workload(current_caller(app), nodeId, workloadId, idempotency_key, ports)
    return Response(status_code=outcome.status, body=outcome.body)


@check_settings
@logger.inject_lambda_context(correlation_id_path=API_REQUEST)
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
