"""A release or a cancel as TransactWriteItems: the reservation's item conditioned on the
version read (a cancel moves it to the node's history), and the node's topology as read."""

from __future__ import annotations

from typing import Any

from reservations.dal.actions import Action, table, topology_check, version_check
from reservations.dal.history import move_actions
from reservations.dal.items import to_attributes
from reservations.dal.keys import reservation_key
from reservations.models.times import format_time
from reservations.models.writes import ReservationChange


def change_actions(change: ReservationChange) -> list[Action]:
    """On the reservation and the node's topology as read; a change that ends the
    reservation (a cancel) moves it to the node's history as it leaves it."""
    if change.ended is not None:
        return [
            *move_actions(change.ended, change.reservation.version),
            topology_check(change.topology),
        ]
    return [_reservation_action(change), topology_check(change.topology)]


def _reservation_action(change: ReservationChange) -> Action:
    """The new status and releases; a version check alone when neither changes."""
    key = reservation_key(change.node_id, change.reservation.id)
    if not change.writes_reservation:
        return version_check(key, change.reservation.version)
    values: dict[str, Any] = {":now": format_time(change.at), ":one": 1}
    sets = ["updatedAt = :now", "version = version + :one"]
    names = {}
    if change.released_after is not None:
        sets.append("releasedUnitIds = :released")
        values[":released"] = list(change.released_after)
    if change.status_after is not None:
        sets.append("#status = :status")
        values[":status"] = change.status_after.value
        names["#status"] = "status"
    update: Action = {
        "TableName": table(),
        "Key": to_attributes(key),
        "UpdateExpression": "SET " + ", ".join(sets),
        "ConditionExpression": "version = :v",
        "ExpressionAttributeValues": to_attributes({**values, ":v": change.reservation.version}),
    }
    if names:
        update["ExpressionAttributeNames"] = names
    return {"Update": update}
