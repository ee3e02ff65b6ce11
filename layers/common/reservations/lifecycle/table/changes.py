"""A release or a cancel as TransactWriteItems: the reservation's item conditioned on the
version read (a cancel moves it to the node's history), and the node's topology as read."""

from __future__ import annotations

from typing import Any

from reservations.kernel.aws.actions import Action, assignments, table, version_check
from reservations.kernel.aws.codec import to_attributes
from reservations.kernel.times import format_time
from reservations.lifecycle.table.history import move_actions
from reservations.lifecycle.writes import ReservationChange
from reservations.nodes import (
    lending_attributes,
    name_orgs,
    node_key,
    reservation_key,
    topology_check,
)


def change_actions(change: ReservationChange) -> list[Action]:
    """On the reservation and the node's topology as read; a change that ends the
    reservation (a cancel) moves it to the node's history as it leaves it."""
    if change.ended is not None:
        return [*move_actions(change.ended, change.reservation.version), *_named_ends(change)]
    return [_reservation_action(change), topology_check(change.topology)]


def _named_ends(change: ReservationChange) -> list[Action]:
    """The orgs whose moments the end brings forward, set in the list access as the change
    carries them; each reservation that decided them checked still at its version read
    (two ends racing, each on the other: one reads again); when a moment changes, the node
    at its version read instead of its topology (a create since, which names orgs again,
    bumps it)."""
    checks = [
        version_check(reservation_key(change.node_id, r.id), r.version)
        for r in change.named_deciding
    ]
    if not change.named_until or change.node_version is None:
        return [topology_check(change.topology), *checks]
    node = version_check(node_key(change.node_id), change.node_version)
    return [node, *checks, name_orgs(change.node_id, change.named_until)]


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
    removes: list[str] = []
    if change.lending_after is not None:
        lent, removes, lent_values = assignments(lending_attributes(change.lending_after), "lend")
        sets += lent
        values.update(lent_values)
    update: Action = {
        "TableName": table(),
        "Key": to_attributes(key),
        "UpdateExpression": "SET " + ", ".join(sets) + _removed(removes),
        "ConditionExpression": "version = :v",
        "ExpressionAttributeValues": to_attributes({**values, ":v": change.reservation.version}),
    }
    if names:
        update["ExpressionAttributeNames"] = names
    return {"Update": update}


def _removed(names: list[str]) -> str:
    return " REMOVE " + ", ".join(names) if names else ""
