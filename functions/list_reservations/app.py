"""Lambda entry point for GET /v1/nodes/{nodeId}/reservations."""

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.utilities.typing import LambdaContext

from reservations.clock import utc_now
from reservations.config import check_settings, cursor_signing_key
from reservations.dal.table import NodeTable
from reservations.http.openapi import responses
from reservations.http.resolver import create_app, current_caller
from reservations.logic.read_reservations import (
    LIMIT_PATTERN,
    STATUS_PATTERN,
    ListQuery,
    list_reservations,
)
from reservations.models.api import ReservationPage
from reservations.observability import API_REQUEST, logger, metrics, tracer
from reservations.rules.cursors import MAX_CURSOR

app = create_app()
reservations = NodeTable()  # its client is made on first use, never at import


def _text(**rules: object) -> dict[str, object]:
    """A query parameter's schema: a string (never null: an absent one is not sent)."""
    return {"anyOf": [{"type": "string", **rules}]}


@app.get(
    "/v1/nodes/<nodeId>/reservations",
    summary="List the reservations of a node the caller may see",
    operation_id="listReservations",
    responses=responses(ReservationPage, "a page of reservations, sorted by id", 400, 401, 404),
)
@tracer.capture_method(capture_response=False)  # a subsegment per use-case call
def get_page(
    nodeId: str,
    # Plain strings here: the logic checks them after the key (401 before 400). The document
    # shows the patterns the logic accepts; a parameter given empty is absent.
    limit: Annotated[
        str | None,
        Query(description="1-100, default 50", json_schema_extra=_text(pattern=LIMIT_PATTERN)),
    ] = None,
    cursor: Annotated[
        str | None,
        Query(
            description="nextCursor of the previous page, unchanged (any other is a 400)",
            json_schema_extra=_text(maxLength=MAX_CURSOR),
        ),
    ] = None,
    status: Annotated[
        str | None,
        Query(
            description="comma-separated: pending, active, expired, cancelled, needs-review",
            json_schema_extra=_text(pattern=STATUS_PATTERN),
        ),
    ] = None,
) -> ReservationPage:
    caller = current_caller(app)
    query = ListQuery(limit=limit, cursor=cursor, status=status)
    return list_reservations(caller, nodeId, query, reservations, cursor_signing_key(), utc_now())


@check_settings
@logger.inject_lambda_context(correlation_id_path=API_REQUEST)
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
