"""A create as TransactWriteItems: the reservation, the node's version bump, the node's list
access, and the unit checks."""

from __future__ import annotations

from reservations.kernel.aws.actions import Action, put, table, version_check
from reservations.kernel.aws.codec import to_attributes
from reservations.lifecycle.table.clock import armed_item
from reservations.lifecycle.writes import ReservationCreate
from reservations.nodes import (
    LIST_PK,
    access_key,
    named_sets,
    node_key,
    node_pk,
    unit_key,
)


def create_actions(write: ReservationCreate) -> list[Action]:
    """Conditioned on the node and every unit read; the reservation only if it is new."""
    node_id = write.reservation.node_id
    return [
        _node_bump(write),
        _access_update(write),
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


def _access_update(write: ReservationCreate) -> Action:
    """Each org the new reservation names, named in the node's list access until the moment
    the create decided (the node's version, which the bump conditions on, holds what it
    read), beside the owner."""
    reservation = write.reservation
    sets, names, values = named_sets(write.named_until)
    action: Action = {
        "TableName": table(),
        "Key": to_attributes(access_key(reservation.node_id)),
        "UpdateExpression": f"SET ownerOrgId = :owner, {LIST_PK} = :list, "
        "version = if_not_exists(version, :zero) + :one" + "".join(f", {s}" for s in sets),
        "ExpressionAttributeValues": to_attributes(
            {
                ":owner": write.owner_org_id,
                ":list": node_pk(reservation.node_id),
                ":zero": 0,
                ":one": 1,
                **values,
            }
        ),
    }
    if names:
        action["ExpressionAttributeNames"] = names
    return {"Update": action}
