"""The TransactWriteItems actions the writes are made of, named: a version check, a put of a
new item, a unit freed, the node's topology as read. Each write's own module composes them."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from reservations.kernel.settings import settings
from reservations.nodes.models.writes import ItemVersion, TopologyRead
from reservations.nodes.table.items import epoch, named_attribute, to_attributes
from reservations.nodes.table.keys import Item, node_key, unit_key

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


def free_unit(node_id: str, unit: ItemVersion) -> Action:
    """A unit its workload no longer holds: unclaimed, at the version read."""
    return {
        "Update": {
            "TableName": table(),
            "Key": to_attributes(unit_key(node_id, unit.id)),
            "UpdateExpression": "REMOVE claimedBy SET version = version + :one",
            "ConditionExpression": "version = :v",
            "ExpressionAttributeValues": to_attributes({":v": unit.version, ":one": 1}),
        }
    }


def topology_check(read: TopologyRead) -> Action:
    """The node's topology generation still as read: only a node update moves it, and only
    a node update changes which reservations a topology change has put under review."""
    check: Action = {
        "TableName": table(),
        "Key": to_attributes(node_key(read.node_id)),
        "ConditionExpression": "attribute_not_exists(topologyGen)",
    }
    if read.topology_gen is not None:
        check["ConditionExpression"] = "topologyGen = :gen"
        check["ExpressionAttributeValues"] = {":gen": {"N": str(read.topology_gen)}}
    return {"ConditionCheck": check}


def named_sets(named: Mapping[str, datetime]) -> tuple[list[str], dict[str, str], dict[str, int]]:
    """``named`` as the list access item's attributes (``items.NAMED_UNTIL``): the SET
    clauses, their names and their values."""
    orgs = sorted(named)
    sets = [f"#n{i} = :n{i}" for i in range(len(orgs))]
    names = {f"#n{i}": named_attribute(org) for i, org in enumerate(orgs)}
    values = {f":n{i}": epoch(named[org]) for i, org in enumerate(orgs)}
    return sets, names, values
