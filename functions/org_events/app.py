"""Lambda entry point for GET /v1/events."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from reservations.events import endpoints
from reservations.events.feeds import FeedQuery, org_feed
from reservations.events.models import EventPage
from reservations.events.table.feeds import EventTable
from reservations.events.wiring import event_ports
from reservations.kernel.http.functions import api_function
from reservations.kernel.http.openapi import comma_list, query_parameter
from reservations.kernel.http.resolver import current_caller
from reservations.kernel.settings import cursor_signing_key

function = api_function(event_ports())
app, lambda_handler = function.app, function.lambda_handler
events = EventTable()  # its client is made on first use, never at import


@function.route(endpoints.ORG_EVENTS)
def get_page(
    # Plain strings: the logic checks them after the key (401 first) and the permission
    # (404 before 400). A parameter given empty is absent.
    types: Annotated[
        list[str] | None, Query(**query_parameter(endpoints.ORG_EVENTS, "types"))
    ] = None,
    after: Annotated[str | None, Query(**query_parameter(endpoints.ORG_EVENTS, "after"))] = None,
    limit: Annotated[str | None, Query(**query_parameter(endpoints.ORG_EVENTS, "limit"))] = None,
    cursor: Annotated[str | None, Query(**query_parameter(endpoints.ORG_EVENTS, "cursor"))] = None,
) -> EventPage:
    caller = current_caller(app)
    query = FeedQuery(types=comma_list(types), after=after, limit=limit, cursor=cursor)
    return org_feed(caller, query, events, cursor_signing_key(), function.ports.clock())
