"""Lambda entry point for POST /v1/nodes/{nodeId}/workloads (the platform scheduler's)."""

import uuid
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Header
from aws_lambda_powertools.utilities.typing import LambdaContext

from reservations.clock import utc_now
from reservations.config import check_settings
from reservations.dal.table import NodeTable
from reservations.http.openapi import request_body, responses
from reservations.http.resolver import create_app, current_caller
from reservations.logic.ports import WorkloadPorts
from reservations.logic.workloads import place_workload
from reservations.models.api import WorkloadView
from reservations.models.requests import PlaceWorkloadRequest, RawBody
from reservations.observability import API_REQUEST, logger, metrics, tracer

app = create_app()
# The real ports; their clients are made on first use, never at import.
ports = WorkloadPorts(store=NodeTable(), clock=utc_now, new_id=lambda: str(uuid.uuid4()))


@app.post(
    "/v1/nodes/<nodeId>/workloads",
    summary="Place a workload on units of a node (operator keys with workload.place)",
    operation_id="placeWorkload",
    responses=responses(WorkloadView, "the workload, running", 400, 401, 404, 409, 422, status=201),
    openapi_extensions=request_body(PlaceWorkloadRequest),
)
@tracer.capture_method(capture_response=False)  # a subsegment per use-case call
def post_workload(
    nodeId: str,
    idempotency_key: Annotated[
        str | None,
        Header(alias="Idempotency-Key", description="1-255 printable characters; 24 h"),
    ] = None,
) -> Response[str]:
    # The body is rendered once, by the logic, so that a replay is the same bytes.
    outcome = place_workload(
        current_caller(app),
        nodeId,
        RawBody(app.current_event.body, app.current_event.is_base64_encoded),
        idempotency_key,
        ports,
    )
    return Response(
        status_code=outcome.status, content_type=content_types.APPLICATION_JSON, body=outcome.body
    )


@check_settings
@logger.inject_lambda_context(correlation_id_path=API_REQUEST)
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
