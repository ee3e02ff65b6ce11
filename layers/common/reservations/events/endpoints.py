"""The events slice's endpoints, each declared once: a node's feed and an org's feed, each
a page of events in record order."""

from __future__ import annotations

from typing import Any

from reservations.events.models import EVENT_TYPES, EventPage
from reservations.kernel.http.openapi import PAGE_QUERY, listed
from reservations.kernel.http.routes import ApiRoute, page_route
from reservations.kernel.times import RFC3339

TAG = "events"
# A feed's query: its types, a time to start after, and a page's limit and cursor.
FEED_QUERY: dict[str, dict[str, Any]] = {
    "types": listed(EVENT_TYPES, "event types"),
    "after": {
        "description": "RFC 3339 with an offset: only events after this time",
        "schema": {"type": "string", "format": "date-time", "pattern": RFC3339},
    },
    **PAGE_QUERY,
}


def _feed(function: str, path: str, summary: str, operation_id: str) -> ApiRoute:
    """An event feed: a page of events, in record order."""
    success = "events, in record order"
    return page_route(function, path, summary, operation_id, success, EventPage, TAG, FEED_QUERY)


NODE_EVENTS = _feed(
    "node_events",
    "/v1/nodes/{nodeId}/events",
    "The node's events the caller may see, oldest first",
    "listNodeEvents",
)
ORG_EVENTS = _feed(
    "org_events",
    "/v1/events",
    "Every event the caller's org may see, across nodes, oldest first",
    "listEvents",
)

ENDPOINTS = (NODE_EVENTS, ORG_EVENTS)
