"""Lambda entry point for GET /v1/nodes/{nodeId}/reservations/units."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from reservations.clock import utc_now
from reservations.config import check_settings
from reservations.dal.table import NodeTable
from reservations.http.openapi import responses
from reservations.http.resolver import create_app, current_caller
from reservations.logic.list_units import list_units
from reservations.models.api import UnitView
from reservations.observability import API_REQUEST, logger, metrics, tracer

app = create_app()
nodes = NodeTable()  # its client is made on first use, never at import


@app.get(
    "/v1/nodes/<nodeId>/reservations/units",
    summary="List a node's allocatable GPU units",
    operation_id="listUnits",
    responses=responses(list[UnitView], "the node's units, sorted by id", 401, 404),
)
@tracer.capture_method(capture_response=False)  # a subsegment per use-case call
def get_units(nodeId: str) -> list[UnitView]:
    return list_units(current_caller(app), nodeId, nodes, utc_now())


@check_settings
@logger.inject_lambda_context(correlation_id_path=API_REQUEST)
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
