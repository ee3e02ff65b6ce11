"""The node's list access item: the orgs its reservations name, pruned of those it names no
more."""

from __future__ import annotations

from datetime import datetime

from botocore.exceptions import ClientError

from reservations.kernel.aws import clients
from reservations.kernel.aws.actions import table
from reservations.kernel.aws.codec import epoch, to_attributes
from reservations.kernel.aws.queries import get_item
from reservations.nodes.table.items import (
    named_attribute,
    named_from_item,
)
from reservations.nodes.table.keys import access_key


def prune_named(node_id: str, now: datetime) -> int:
    """The orgs the node's list access names no more at ``now`` taken out of it, so that it
    holds the orgs of the reservations still readable, not of every one the node ever had:
    one GetItem, and one conditional UpdateItem when there are some (each still past then:
    a create that named one again since keeps it, and the next pass tries again); how many
    it took out."""
    item = get_item(access_key(node_id))
    stale = sorted(o for o, until in named_from_item(item or {}).items() if until <= now)
    if not stale:
        return 0
    names = {f"#s{i}": named_attribute(org) for i, org in enumerate(stale)}
    try:
        clients.dynamodb().update_item(
            TableName=table(),
            Key=to_attributes(access_key(node_id)),
            UpdateExpression="SET version = if_not_exists(version, :zero) + :one "
            "REMOVE " + ", ".join(names),
            ConditionExpression=" AND ".join(f"{name} <= :now" for name in names),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=to_attributes({":now": epoch(now), ":zero": 0, ":one": 1}),
        )
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        return 0
    return len(stale)
