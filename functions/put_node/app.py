"""Lambda entry point for PUT /v1/nodes/{nodeId}."""

from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.utilities.typing import LambdaContext

from reservations.clock import utc_now
from reservations.config import check_settings
from reservations.dal.nodes import make_node_queue
from reservations.dal.table import NodeTable
from reservations.http.openapi import request_body, responses
from reservations.http.resolver import create_app, current_caller
from reservations.logic.nodes import put_node
from reservations.logic.ports import NodePorts
from reservations.models.api import NodeView
from reservations.models.node_requests import NodeRequest
from reservations.models.requests import RawBody
from reservations.observability import API_REQUEST, logger, metrics, tracer

app = create_app()
# The real ports; their clients are made on first use, never at import.
ports = NodePorts(store=NodeTable(), make_queue=make_node_queue, clock=utc_now)


@app.put(
    "/v1/nodes/<nodeId>",
    summary="Register a node or update its topology (operator only)",
    description=(
        "PUT is idempotent by itself and takes no Idempotency-Key: a request carrying the "
        "header is answered exactly as one without it (the header is neither checked nor "
        "stored). A repeat of the stored node changes nothing and answers 200; a retry "
        "after a lost 201 answers 200."
    ),
    operation_id="putNode",
    responses={
        201: {
            "description": "the node, registered",
            "content": {"application/json": {"model": NodeView}},
        },
        **responses(NodeView, "the node, updated", 400, 401, 404, 409),
    },
    openapi_extensions=request_body(NodeRequest),
)
@tracer.capture_method(capture_response=False)  # a subsegment per use-case call
def put_node_route(nodeId: str) -> Response[str]:
    outcome = put_node(
        current_caller(app),
        nodeId,
        RawBody(app.current_event.body, app.current_event.is_base64_encoded),
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
