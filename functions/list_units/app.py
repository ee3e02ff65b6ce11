"""Lambda entry point for GET /v1/nodes/{nodeId}/reservations/units."""

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from reservations.clock import utc_now
from reservations.dal import store
from reservations.http.openapi import responses
from reservations.http.resolver import create_app, current_caller
from reservations.logic.list_units import list_units
from reservations.models.api import UnitView

logger = Logger()
metrics = Metrics()
tracer = Tracer()
app = create_app()


@app.get(
    "/v1/nodes/<nodeId>/reservations/units",
    summary="List a node's allocatable GPU units",
    operation_id="listUnits",
    responses=responses(list[UnitView], "the node's units, sorted by id", 401, 404),
)
def get_units(nodeId: str) -> list[UnitView]:
    return list_units(current_caller(app), nodeId, store.load_node, utc_now())


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
