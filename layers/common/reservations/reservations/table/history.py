"""A reservation leaving the node's partition for its history (``NODEHIST#<node>``), as
TransactWriteItems actions: its delete, conditioned on the version read, and its history
item, put only where none is. A cancel does it in its own transaction; the history mover
does it for each expired reservation. Both are safe to repeat: a move already made finds no
item at that version, and the transaction changes nothing."""

from __future__ import annotations

from reservations.kernel.aws.actions import Action, put, table
from reservations.kernel.aws.codec import to_attributes
from reservations.kernel.settings import settings
from reservations.nodes import (
    HistoryMove,
    Reservation,
    reservation_history_item,
    reservation_key,
    retained_until,
)


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
