"""Usage's reads of the table: a node's feed (``NODEEVT#<node>``, every event, as the node's
changes wrote them) and the records its loads from a fleet file left (``USAGE#<node>``,
sort key ``LOADED#<time>``: the node object the file gave, the fold's ``node.loaded``).

A load writes no event (the contract's), so the loader records what it loaded here instead,
at the load's moment; nothing else writes the partition."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

from reservations.kernel.aws import clients
from reservations.kernel.aws.codec import Item, from_attributes, to_attributes
from reservations.kernel.settings import settings
from reservations.kernel.times import format_event_time
from reservations.nodes import node_events_pk
from reservations.usage.rules.facts import NODE_LOADED

USAGE_PREFIX = "USAGE#"
LOADED_PREFIX = "LOADED#"


def usage_pk(node_id: str) -> str:
    return USAGE_PREFIX + node_id


def loaded_item(node_id: str, node: Mapping[str, Any], loaded_at: datetime) -> Item:
    """The record of a load: the node object as the fleet file gave it, at the load's
    moment (a load again leaves another; the fold takes each as the node's whole state)."""
    at = format_event_time(loaded_at)
    fact = {
        "id": f"loaded-{node_id}-{at}",
        "type": NODE_LOADED,
        "time": at,
        "subject": f"nodes/{node_id}",
        "data": dict(node),
    }
    return {"PK": usage_pk(node_id), "SK": LOADED_PREFIX + at, "fact": json.dumps(fact)}


def _query(partition: str, attribute: str) -> Iterator[str]:
    """Every item's ``attribute`` in the partition, page after page (1 MB each)."""
    query: dict[str, Any] = {
        "TableName": settings().table_name,
        "KeyConditionExpression": "PK = :pk",
        "ExpressionAttributeValues": to_attributes({":pk": partition}),
        "ProjectionExpression": "#a",
        "ExpressionAttributeNames": {"#a": attribute},
        "ConsistentRead": True,
    }
    while True:
        page = clients.dynamodb().query(**query)
        for item in page["Items"]:
            value = from_attributes(item).get(attribute)
            if isinstance(value, str):
                yield value
        if "LastEvaluatedKey" not in page:
            return
        query["ExclusiveStartKey"] = page["LastEvaluatedKey"]


class UsageTable:
    """The node's history as the fold reads it; clients are made on first use."""

    def node_events(self, node_id: str) -> list[Mapping[str, Any]]:
        loads = [json.loads(fact) for fact in _query(usage_pk(node_id), "fact")]
        events = [json.loads(event) for event in _query(node_events_pk(node_id), "event")]
        return loads + events
