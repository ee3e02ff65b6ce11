"""The TransactWriteItems actions the writes are made of, named: a version check, a put of a
new item. Each write's own module composes them with its own."""

from __future__ import annotations

from typing import Any

from reservations.kernel.aws.codec import Item, to_attributes
from reservations.kernel.settings import settings
from reservations.kernel.writes import ItemVersion

Action = dict[str, Any]
MAX_ACTIONS = 100  # DynamoDB's limit for one TransactWriteItems


def table() -> str:
    return settings().table_name


def as_read(version: int | None) -> Action:
    """The condition that an item is as read: absent (None), or at ``version``."""
    if version is None:
        return {"ConditionExpression": "attribute_not_exists(PK)"}
    return {
        "ConditionExpression": "version = :v",
        "ExpressionAttributeValues": {":v": {"N": str(version)}},
    }


def version_check(key: Item, version: int) -> Action:
    """The item is still at the version read; nothing written to it."""
    return {"ConditionCheck": {"TableName": table(), "Key": to_attributes(key), **as_read(version)}}


def put(item: Item, read: int | None = None) -> Action:
    """The item written whole: where it was absent when read (``read`` None), or at the
    version read."""
    return {"Put": {"TableName": table(), "Item": to_attributes(item), **as_read(read)}}


def overwrite(item: Item) -> Action:
    """The item written whole, whatever is there (a history item: its key is unique)."""
    return {"Put": {"TableName": table(), "Item": to_attributes(item)}}


def delete(key: Item, read: ItemVersion) -> Action:
    """The item deleted, at the version read."""
    return {"Delete": {"TableName": table(), "Key": to_attributes(key), **as_read(read.version)}}


def assignments(attributes: Item, tag: str) -> tuple[list[str], list[str], dict[str, Any]]:
    """An Update's clauses that leave ``attributes`` as given: each one set to its value, or
    removed where it is None. The SET clauses, the names to REMOVE, and the values (named
    ``:<tag><n>``, so that they never meet the update's own)."""
    sets: list[str] = []
    removes: list[str] = []
    values: dict[str, Any] = {}
    for n, (name, value) in enumerate(attributes.items()):
        if value is None:
            removes.append(name)
        else:
            sets.append(f"{name} = :{tag}{n}")
            values[f":{tag}{n}"] = value
    return sets, removes, values
