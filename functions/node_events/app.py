"""Lambda entry point for GET /v1/nodes/{nodeId}/events."""

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.utilities.typing import LambdaContext

from reservations.clock import utc_now
from reservations.config import check_settings, cursor_signing_key
from reservations.dal.events import EventTable
from reservations.http.openapi import feed_parameter, responses
from reservations.http.resolver import create_app, current_caller
from reservations.logic.event_feeds import FeedQuery, node_feed
from reservations.models.events import EventPage
from reservations.observability import API_REQUEST, logger, metrics, tracer

app = create_app()
events = EventTable()  # its client is made on first use, never at import


@app.get(
    "/v1/nodes/<nodeId>/events",
    summary="The node's events the caller may see, oldest first",
    operation_id="listNodeEvents",
    responses=responses(EventPage, "a page of events, oldest first", 400, 401, 404),
)
@tracer.capture_method(capture_response=False)  # a subsegment per use-case call
def get_page(
    nodeId: str,
    # Plain strings: the logic checks them after the key (401 first) and the caller's
    # access to the node (404 before 400). A parameter given empty is absent.
    types: Annotated[str | None, Query(**feed_parameter("types"))] = None,
    after: Annotated[str | None, Query(**feed_parameter("after"))] = None,
    limit: Annotated[str | None, Query(**feed_parameter("limit"))] = None,
    cursor: Annotated[str | None, Query(**feed_parameter("cursor"))] = None,
) -> EventPage:
    caller = current_caller(app)
    query = FeedQuery(types=types, after=after, limit=limit, cursor=cursor)
    return node_feed(caller, nodeId, query, events, cursor_signing_key(), utc_now())


@check_settings
@logger.inject_lambda_context(correlation_id_path=API_REQUEST)
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
