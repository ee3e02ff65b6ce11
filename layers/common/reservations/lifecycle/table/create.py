"""A create as TransactWriteItems: the reservation, the node's version bump, the node's list
access, and the unit checks."""

from __future__ import annotations

from reservations.kernel.aws.actions import Action, put, table, version_check
from reservations.kernel.aws.codec import to_attributes
from reservations.lifecycle.table.clock import armed_item
from reservations.lifecycle.writes import ReservationCreate
from reservations.nodes import name_orgs, node_key, unit_key


def create_actions(write: ReservationCreate) -> list[Action]:
    """Conditioned on the node and every unit read; the reservation only if it is new. The
    node's list access names each org the reservation names until the moment the create
    decided, beside the owner (the node's version, which the bump conditions on, holds what
    it read)."""
    node_id = write.reservation.node_id
    return [
        _node_bump(write),
        name_orgs(node_id, write.named_until, write.owner_org_id),
        *(version_check(unit_key(node_id, unit.id), unit.version) for unit in write.units),
        put(armed_item(write.reservation)),
    ]


def _node_bump(write: ReservationCreate) -> Action:
    """Two creates on one node serialize here: the second finds the version moved."""
    return {
        "Update": {
            "TableName": table(),
            "Key": to_attributes(node_key(write.reservation.node_id)),
            "UpdateExpression": "SET version = version + :one",
            "ConditionExpression": "version = :v",
            "ExpressionAttributeValues": to_attributes({":one": 1, ":v": write.node.version}),
        }
    }
