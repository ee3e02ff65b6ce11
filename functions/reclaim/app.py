"""Lambda entry point for POST /v1/nodes/{nodeId}/reservations/{id}/reclaim."""

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from reservations.clock import utc_now
from reservations.dal import store
from reservations.http.resolver import create_app, current_caller
from reservations.logic.reclaim import reclaim, register_lambda_context
from reservations.models.api import ReclaimResponse

logger = Logger()
metrics = Metrics()
tracer = Tracer()
app = create_app()


@app.post("/v1/nodes/<nodeId>/reservations/<reservationId>/reclaim")
def post_reclaim(nodeId: str, reservationId: str) -> ReclaimResponse:
    event = app.current_event
    result = reclaim(
        current_caller(app),
        nodeId,
        reservationId,
        event.decoded_body,
        event.headers.get("idempotency-key"),
        store.load_node,
        utc_now,
    )
    return ReclaimResponse.model_validate(result)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    register_lambda_context(context)
    return app.resolve(event, context)
