"""The events slice's endpoints, each declared once: a node's feed and an org's feed, each
a page of events in record order."""

from __future__ import annotations

from typing import Any

from reservations.events.feeds import FeedQuery, node_feed, org_feed
from reservations.events.models import EVENT_TYPES, EventPage
from reservations.events.table.feeds import EventTable
from reservations.events.wiring import event_ports
from reservations.kernel.grants import Grant
from reservations.kernel.http.openapi import PAGE_QUERY, listed
from reservations.kernel.http.routes import ApiRoute, Call, page_route
from reservations.kernel.ports import Ports
from reservations.kernel.times import RFC3339
from reservations.nodes import node_grants

TAG = "events"
EVENTS = EventTable()  # its client is made on first use, never at import
# A feed's query: its types, a time to start after, and a page's limit and cursor.
FEED_QUERY: dict[str, dict[str, Any]] = {
    "types": listed(EVENT_TYPES, "event types"),
    "after": {
        "description": "RFC 3339 with an offset: only events after this time",
        "schema": {"type": "string", "format": "date-time", "pattern": RFC3339},
    },
    **PAGE_QUERY,
}


def _node_page(call: Call[Ports]) -> EventPage:
    query, ports = FeedQuery(**call.query), call.ports
    return node_feed(
        call.caller, call.ids["nodeId"], query, EVENTS, ports.signing_key(), ports.clock()
    )


def _org_page(call: Call[Ports]) -> EventPage:
    query, ports = FeedQuery(**call.query), call.ports
    return org_feed(call.caller, query, EVENTS, ports.signing_key(), ports.clock())


def _feed(**declared: Any) -> ApiRoute:
    """An event feed: a page of events, in record order."""
    return page_route(success="events, in record order", response=EventPage, ports=event_ports,
                      tag=TAG, query=FEED_QUERY, **declared)  # fmt: skip


NODE_EVENTS = _feed(
    function="node_events",
    path="/v1/nodes/{nodeId}/events",
    summary="The node's events the caller may see, oldest first",
    operation_id="listNodeEvents",
    use=_node_page,
    grants=(
        Grant(sid="ReadNodeListAccess", actions=("dynamodb:GetItem",), keys=(node_grants.NODES,)),
        Grant(sid="ReadNodeFeeds", actions=("dynamodb:Query",), keys=(node_grants.EVENTS,)),
    ),
)
ORG_EVENTS = _feed(
    function="org_events",
    path="/v1/events",
    summary="Every event the caller's org may see, across nodes, oldest first",
    operation_id="listEvents",
    use=_org_page,
    grants=(Grant(sid="ReadOrgFeeds", actions=("dynamodb:Query",), keys=("ORGEVT#*",)),),
)

ENDPOINTS = (NODE_EVENTS, ORG_EVENTS)
