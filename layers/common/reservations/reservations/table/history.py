"""A reservation leaving the node's partition for its history (``NODEHIST#<node>``), as
TransactWriteItems actions: its delete, conditioned on the version read, and its history
item, put only where none is. A cancel does it in its own transaction; the history mover
does it for each expired reservation. Both are safe to repeat: a move already made finds no
item at that version, and the transaction changes nothing."""

from __future__ import annotations

from datetime import datetime

from botocore.exceptions import ClientError

from reservations.kernel.aws import clients
from reservations.kernel.aws.actions import Action, put, table
from reservations.kernel.aws.codec import epoch, to_attributes
from reservations.kernel.aws.queries import get_item
from reservations.kernel.settings import settings
from reservations.nodes.models.partition import Reservation
from reservations.nodes.models.writes import HistoryMove
from reservations.nodes.rules.history import retained_until
from reservations.nodes.table.items import (
    named_attribute,
    named_from_item,
    reservation_history_item,
)
from reservations.nodes.table.keys import access_key, reservation_key


def move_actions(after: Reservation, version_read: int) -> list[Action]:
    """``after`` (the reservation as the write leaves it) out of the node's partition, where
    it is still at ``version_read``, and into the node's history."""
    kept_until = retained_until(after, settings().history_retention_days)
    delete: Action = {
        "Delete": {
            "TableName": table(),
            "Key": to_attributes(reservation_key(after.node_id, after.id)),
            "ConditionExpression": "version = :v",
            "ExpressionAttributeValues": to_attributes({":v": version_read}),
        }
    }
    return [delete, put(reservation_history_item(after, kept_until))]


def history_move_actions(move: HistoryMove) -> list[Action]:
    """An expired reservation moved as it was read."""
    return move_actions(move.reservation, move.reservation.version)


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
