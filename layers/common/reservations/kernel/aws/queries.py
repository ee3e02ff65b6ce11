"""Reads of the table: one item, a batch of keys, every item a Query matches (page by
page)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from reservations.kernel.aws import clients
from reservations.kernel.aws.actions import table
from reservations.kernel.aws.codec import Item, from_attributes, to_attributes


def query_items(query: dict[str, Any]) -> Iterator[Item]:
    """Every item the Query matches, page by page (one request unless it passes 1 MB)."""
    while True:
        page = clients.dynamodb().query(**query)
        yield from (from_attributes(attributes) for attributes in page["Items"])
        if "LastEvaluatedKey" not in page:
            return
        query = {**query, "ExclusiveStartKey": page["LastEvaluatedKey"]}


def get_item(key: Item) -> Item | None:
    """One item, read strongly consistent; None when there is none."""
    response = clients.dynamodb().get_item(
        TableName=table(), Key=to_attributes(key), ConsistentRead=True
    )
    item = response.get("Item")
    return from_attributes(item) if item else None


def batch_get(keys: list[Item]) -> list[Item]:
    """The items of ``keys`` that exist, strongly consistent, in one BatchGetItem (more only
    for keys DynamoDB left unprocessed, under throttling)."""
    request: dict[str, Any] = {
        table(): {"Keys": [to_attributes(key) for key in keys], "ConsistentRead": True}
    }
    items: list[Item] = []
    while request:
        response = clients.dynamodb().batch_get_item(RequestItems=request)
        items.extend(from_attributes(i) for i in response["Responses"].get(table(), []))
        request = response.get("UnprocessedKeys") or {}
    return items
