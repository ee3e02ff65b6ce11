"""Lambda entry point for GET /v1/nodes/{nodeId}/reservations/{id}."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from reservations.clock import utc_now
from reservations.config import check_settings
from reservations.dal.table import NodeTable
from reservations.http.openapi import responses
from reservations.http.resolver import create_app, current_caller
from reservations.logic.read_reservations import get_reservation
from reservations.models.api import ReservationView
from reservations.observability import API_REQUEST, logger, metrics, tracer

app = create_app()
reservations = NodeTable()  # its client is made on first use, never at import


@app.get(
    "/v1/nodes/<nodeId>/reservations/<reservationId>",
    summary="Get one reservation of a node",
    operation_id="getReservation",
    responses=responses(ReservationView, "the reservation, with its effective status", 401, 404),
)
@tracer.capture_method(capture_response=False)  # a subsegment per use-case call
def get_one(nodeId: str, reservationId: str) -> ReservationView:
    return get_reservation(current_caller(app), nodeId, reservationId, reservations, utc_now())


@check_settings
@logger.inject_lambda_context(correlation_id_path=API_REQUEST)
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
