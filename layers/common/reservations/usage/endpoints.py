"""The usage slice's endpoint, declared once: a page of usage rows, by node or by
reservation, hourly or daily."""

from __future__ import annotations

from typing import Any

from reservations.kernel.grants import Grant
from reservations.kernel.http.openapi import PAGE_QUERY
from reservations.kernel.http.routes import Call, page_route
from reservations.kernel.ids import RESOURCE_ID
from reservations.kernel.ports import Ports
from reservations.kernel.times import RFC3339
from reservations.nodes import node_grants
from reservations.usage.models import UsagePage
from reservations.usage.read import list_usage
from reservations.usage.rules.query import MAX_DAYS, MAX_KEYS, GroupBy, UsageQuery
from reservations.usage.rules.rows import Granularity
from reservations.usage.wiring import usage_ports, usage_reads

TAG = "usage"


def _page(call: Call[Ports]) -> UsagePage:
    given, ports = call.query, call.ports
    query = UsageQuery(
        from_=given["from"],
        to=given["to"],
        granularity=given["granularity"],
        group_by=given["groupBy"],
        node_id=given["nodeId"],
        reservation_id=given["reservationId"],
        limit=given["limit"],
        cursor=given["cursor"],
    )
    return list_usage(call.caller, query, usage_reads(ports.clock), ports.signing_key(),
                      ports.clock())  # fmt: skip


def _ids(what: str) -> dict[str, Any]:
    return {
        "description": f"comma-separated {what} ids, at most {MAX_KEYS}",
        "schema": {
            "type": "array",
            "items": {"type": "string", "pattern": RESOURCE_ID},
            "maxItems": MAX_KEYS,
        },
        "style": "form",
        "explode": False,
    }


def _boundary(what: str) -> dict[str, Any]:
    return {
        "description": f"RFC 3339, on a whole UTC hour (granularity hour) or day (day): {what}",
        "required": True,
        "schema": {"type": "string", "format": "date-time", "pattern": RFC3339},
    }


LIST_USAGE = page_route(
    function="list_usage",
    path="/v1/usage",
    summary="Usage rows the caller may see: each state's unit- and GPU-milliseconds",
    operation_id="listUsage",
    success="a page of rows, by node, then reservation, then start",
    response=UsagePage,
    use=_page,
    ports=usage_ports,
    grants=(
        Grant(
            sid="ReadNodeListAccess",
            actions=("dynamodb:GetItem",),
            keys=(node_grants.NODES,),
            why="A node's list access: its owner, and the orgs its reservations name.",
        ),
        Grant(
            sid="ReadNodeCheckpointsAndLoads",
            actions=("dynamodb:Query",),
            keys=("USAGE#*",),
            why="The node's checkpoint before the period, and its loads from a fleet file.",
        ),
        Grant(
            sid="ReadNodeEventsByTime",
            actions=("dynamodb:Query",),
            keys=(node_grants.EVENTS,),
            on="index/EventsByTime",
            why="The node's events from its checkpoint to the period's end: its fold.",
        ),
        Grant(
            sid="QueryFleetIndex",
            actions=("dynamodb:Query",),
            keys=("FLEET#*",),
            why="Without nodeId: the nodes the org owns, and the nodes of the reservations "
            "its fleet index lists (the entries alone).",
        ),
        Grant(
            sid="ReadGoverningReservations",
            actions=("dynamodb:BatchGetItem",),
            keys=(node_grants.NODES, node_grants.HISTORY),
            why="By reservation, those that governed a unit in the page's periods, by id, "
            "live or in the history.",
        ),
    ),
    tag=TAG,
    query={
        "from": _boundary("the first period's start"),
        "to": _boundary(
            f"the last period's end; at most {MAX_DAYS[Granularity.HOUR]} days after from "
            f"hourly, {MAX_DAYS[Granularity.DAY]} daily"
        ),
        "granularity": {
            "description": "a row per whole UTC hour or day (default day)",
            "schema": {"type": "string", "enum": [g.value for g in Granularity]},
        },
        "groupBy": {
            "description": "a row per node, or per reservation (default node)",
            "schema": {"type": "string", "enum": [g.value for g in GroupBy]},
        },
        "nodeId": _ids("node"),
        "reservationId": _ids("reservation (with groupBy=reservation)"),
        **PAGE_QUERY,
    },
)

ENDPOINTS = (LIST_USAGE,)
