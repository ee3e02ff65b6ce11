"""A PATCH as TransactWriteItems: the node's version bump, the reservation written whole from
the model (so every attribute its encoder derives, its index attributes included, follows
the new terms), each added unit at its version read, and the node's list access where the
change names orgs anew or longer."""

from __future__ import annotations

from reservations.kernel.aws.actions import Action, table, version_check
from reservations.kernel.aws.codec import to_attributes
from reservations.lifecycle.table.clock import armed_item
from reservations.lifecycle.writes import ReservationUpdate
from reservations.nodes import clock_read_condition, name_orgs, node_key, unit_key


def update_actions(write: ReservationUpdate) -> list[Action]:
    """Conditioned on the node, the reservation and every added unit as read; each org whose
    moment the change moves on, named until then in the node's list access (the node's
    version, which the bump conditions on, holds what was read)."""
    node_id = write.after.node_id
    actions = [
        _node_bump(write),
        _reservation_put(write),
        *(version_check(unit_key(node_id, unit.id), unit.version) for unit in write.units),
    ]
    if write.named_until:
        actions.append(name_orgs(node_id, write.named_until))
    return actions


def _reservation_put(write: ReservationUpdate) -> Action:
    """The reservation written whole at its version read and at its place in the clock's
    index as read: a clock moment fired between the read and this commit (which moves
    ``clockAt`` without bumping the version) makes it fail, so the item written cannot
    carry the clock's record from before that moment and fire it a second time."""
    clock, clock_values = clock_read_condition(write.before.clock_read)
    return {
        "Put": {
            "TableName": table(),
            "Item": to_attributes(armed_item(write.after)),
            "ConditionExpression": f"version = :v AND {clock}",
            "ExpressionAttributeValues": to_attributes(
                {":v": write.before.version, **clock_values}
            ),
        }
    }


def _node_bump(write: ReservationUpdate) -> Action:
    """A create, a node update or another change since the read makes it fail: the overlap
    and the topology were decided on what the node had."""
    return {
        "Update": {
            "TableName": table(),
            "Key": to_attributes(node_key(write.after.node_id)),
            "UpdateExpression": "SET version = version + :one",
            "ConditionExpression": "version = :v",
            "ExpressionAttributeValues": to_attributes({":one": 1, ":v": write.node.version}),
        }
    }
