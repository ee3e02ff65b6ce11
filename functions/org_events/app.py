"""Lambda entry point for GET /v1/events."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from reservations.config import cursor_signing_key
from reservations.dal.events import EventTable
from reservations.http import routes
from reservations.http.functions import api_function
from reservations.http.openapi import query_parameter
from reservations.http.resolver import current_caller
from reservations.logic.event_feeds import FeedQuery, org_feed
from reservations.models.events import EventPage

function = api_function()
app, lambda_handler = function.app, function.lambda_handler
events = EventTable()  # its client is made on first use, never at import


@function.route(routes.ORG_EVENTS)
def get_page(
    # Plain strings: the logic checks them after the key (401 first) and the permission
    # (404 before 400). A parameter given empty is absent.
    types: Annotated[str | None, Query(**query_parameter("types"))] = None,
    after: Annotated[str | None, Query(**query_parameter("after"))] = None,
    limit: Annotated[str | None, Query(**query_parameter("limit"))] = None,
    cursor: Annotated[str | None, Query(**query_parameter("cursor"))] = None,
) -> EventPage:
    caller = current_caller(app)
    query = FeedQuery(types=types, after=after, limit=limit, cursor=cursor)
    return org_feed(caller, query, events, cursor_signing_key(), function.ports.clock())
