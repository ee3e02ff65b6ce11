"""A release or a cancel as TransactWriteItems: the reservation's item conditioned on the
version read (a cancel moves it to the node's history), and the node's topology as read."""

from __future__ import annotations

from typing import Any

from reservations.config import settings
from reservations.dal.actions import Action, named_sets, table, topology_check, version_check
from reservations.dal.history import move_actions
from reservations.dal.items import to_attributes
from reservations.dal.keys import access_key, node_key, reservation_key
from reservations.models.times import format_time
from reservations.models.writes import ReservationChange
from reservations.rules.history import named_after_end


def change_actions(change: ReservationChange) -> list[Action]:
    """On the reservation and the node's topology as read; a change that ends the
    reservation (a cancel) moves it to the node's history as it leaves it."""
    if change.ended is not None:
        return [*move_actions(change.ended, change.reservation.version), *_named_ends(change)]
    return [_reservation_action(change), topology_check(change.topology)]


def _named_ends(change: ReservationChange) -> list[Action]:
    """The topology as read; and when the ended reservation names orgs, the node at its
    version read instead (a create, which names orgs again, bumps it) and those orgs named
    in the list access until the end's retention unless another reservation names them
    longer, where no other end has come forward since the read (each still at least what
    the read says: an end in between found it lower, and the write runs again)."""
    assert change.ended is not None
    retention = settings().history_retention_days
    before, after = named_after_end(change.ended, change.named_by, retention)
    if not after or change.node_version is None:
        return [topology_check(change.topology)]
    sets, names, values = named_sets({o: after[o] for o in after if after[o] != before[o]})
    _, olds, expected = named_sets(before, "e")
    access: Action = {
        "TableName": table(),
        "Key": to_attributes(access_key(change.node_id)),
        "ConditionExpression": " AND ".join(
            f"(attribute_not_exists({n}) OR {n} >= {n.replace('#', ':')})" for n in olds
        ),
        "ExpressionAttributeNames": {**names, **olds},
        "ExpressionAttributeValues": to_attributes(
            {**values, **expected, **({":zero": 0, ":one": 1} if sets else {})}
        ),
    }
    if sets:
        bump = "SET version = if_not_exists(version, :zero) + :one, "
        access["UpdateExpression"] = bump + ", ".join(sets)
    node = version_check(node_key(change.node_id), change.node_version)
    return [node, {"Update" if sets else "ConditionCheck": access}]


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
