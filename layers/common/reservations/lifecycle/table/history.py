"""A reservation leaving the node's partition for its history (``NODEHIST#<node>``), as
TransactWriteItems actions: its delete, conditioned on the version read, and its history
item, put only where none is. A cancel does it in its own transaction; the history mover
does it for each expired reservation. Both are safe to repeat: a move already made finds no
item at that version, and the transaction changes nothing."""

from __future__ import annotations

from reservations.kernel.aws.actions import Action, put, table
from reservations.kernel.aws.codec import to_attributes
from reservations.kernel.settings import settings
from reservations.lifecycle.rules.history import retained_until
from reservations.lifecycle.writes import HistoryMove
from reservations.nodes import (
    Reservation,
    clock_read_condition,
    reservation_history_item,
    reservation_key,
)


def move_actions(
    after: Reservation, version_read: int, clock_read: Reservation | None = None
) -> list[Action]:
    """``after`` (the reservation as the write leaves it) out of the node's partition, where
    it is still at ``version_read`` (and, with ``clock_read``, at the clock index place it
    was read at: a move that carries the clock's events must not carry one fired since)."""
    kept_until = retained_until(after, settings().history_retention_days)
    condition, values = "version = :v", {":v": version_read}
    if clock_read is not None:
        clock, clock_values = clock_read_condition(clock_read.clock_read)
        condition, values = f"{condition} AND {clock}", {**values, **clock_values}
    delete: Action = {
        "Delete": {
            "TableName": table(),
            "Key": to_attributes(reservation_key(after.node_id, after.id)),
            "ConditionExpression": condition,
            "ExpressionAttributeValues": to_attributes(values),
        }
    }
    return [delete, put(reservation_history_item(after, kept_until))]


def history_move_actions(move: HistoryMove) -> list[Action]:
    """An expired reservation moved as it was read, with the clock's events it carries."""
    return move_actions(move.reservation, move.reservation.version, move.reservation)
