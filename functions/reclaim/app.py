"""Lambda entry point for POST /v1/nodes/{nodeId}/reservations/{id}/reclaim."""

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Header
from aws_lambda_powertools.utilities.typing import LambdaContext

from reservations.clock import utc_now
from reservations.config import check_settings
from reservations.dal.queues import send_terminations
from reservations.dal.table import NodeTable
from reservations.http.openapi import reclaim_request_body, responses
from reservations.http.resolver import create_app, current_caller
from reservations.logic.ports import ReclaimPorts
from reservations.logic.reclaim import reclaim
from reservations.models.api import ReclaimResponse
from reservations.models.requests import RawBody
from reservations.observability import API_REQUEST, logger, metrics, tracer

app = create_app()
# The real ports; their clients are made on first use, never at import.
ports = ReclaimPorts(store=NodeTable(), send=send_terminations, clock=utc_now)


@app.post(
    "/v1/nodes/<nodeId>/reservations/<reservationId>/reclaim",
    summary="Reclaim released units and terminate the spot workloads on them",
    operation_id="reclaimUnits",
    responses=responses(
        ReclaimResponse, "the reservation after the call, and the outcome", 400, 401, 404, 409, 422
    ),
    openapi_extensions=reclaim_request_body(),
)
@tracer.capture_method(capture_response=False)  # a subsegment per use-case call
def post_reclaim(
    nodeId: str,
    reservationId: str,
    idempotency_key: Annotated[
        str | None,
        Header(alias="Idempotency-Key", description="1-255 printable characters; 24 h"),
    ] = None,
) -> Response[str]:
    # The body is rendered once, by the logic, so that a replay is the same bytes.
    outcome = reclaim(
        current_caller(app),
        nodeId,
        reservationId,
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
