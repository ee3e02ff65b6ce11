"""Reads the endpoints make: one node partition, one API key."""

from __future__ import annotations

from typing import Any

from reservations.config import settings
from reservations.dal import clients
from reservations.dal.items import (
    ACCESS_SK,
    APIKEY_SK,
    api_key_from_item,
    apikey_pk,
    from_attributes,
    node_pk,
    snapshot_from_items,
)
from reservations.models.domain import ApiKey, NodeSnapshot


def load_node(node_id: str) -> NodeSnapshot | None:
    """The node's partition up to its list access item (which only the reservation list
    reads), strongly consistent; usually a single Query page."""
    query: dict[str, Any] = {
        "TableName": settings().table_name,
        "KeyConditionExpression": "PK = :pk AND SK < :access",
        "ExpressionAttributeValues": {
            ":pk": {"S": node_pk(node_id)},
            ":access": {"S": ACCESS_SK},
        },
        "ConsistentRead": True,
    }
    items: list[dict[str, Any]] = []
    while True:
        page = clients.dynamodb().query(**query)
        items.extend(from_attributes(attributes) for attributes in page["Items"])
        if "LastEvaluatedKey" not in page:
            break
        query["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    return snapshot_from_items(items)


def load_api_key(key_hash: str) -> ApiKey | None:
    response = clients.dynamodb().get_item(
        TableName=settings().table_name,
        Key={"PK": {"S": apikey_pk(key_hash)}, "SK": {"S": APIKEY_SK}},
        ConsistentRead=True,
    )
    item = response.get("Item")
    return api_key_from_item(from_attributes(item)) if item else None
