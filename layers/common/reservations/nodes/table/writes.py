"""The node operator's write as TransactWriteItems: a node registered or updated."""

from __future__ import annotations

from typing import Any

from reservations.kernel.aws.actions import Action, delete, put, table
from reservations.kernel.aws.codec import to_attributes
from reservations.kernel.times import format_time
from reservations.nodes.models.writes import NodePut
from reservations.nodes.table.items import (
    PLACEMENTS,
    UNITS_CHANGED_AT,
    node_item,
    unit_item,
)
from reservations.nodes.table.keys import (
    LIST_PK,
    access_key,
    node_key,
    node_pk,
    unit_key,
)
from reservations.nodes.table.store import Writer


def node_put_actions(write: NodePut, room: int) -> list[Action]:
    """The node item (its generation, owner, each unit's generation of last change; on the
    version and the placement count read), its list access item (the same owner and
    generations, which every page of the reservation list reads), every new or changed unit
    (at most 64): at most 66 actions. The unit items to delete fill the rest of ``room``
    (what DynamoDB's 100 leaves beside the records every write puts): units the node no
    longer lists are invisible to every call already (``items.snapshot_from_items``), so a
    delete that does not fit is left for the next update. A unit claimed since the read
    moves the node's placement count, so the update fails even when that unit's delete did
    not fit."""
    actions = [
        _node_action(write),
        _access_action(write),
        *(put(unit_item(write.node.id, unit_put.unit), unit_put.read) for unit_put in write.units),
    ]
    deletes = [*write.removed, *write.leftovers][: room - len(actions)]
    return actions + [delete(unit_key(write.node.id, unit.id), unit) for unit in deletes]


def _node_action(write: NodePut) -> Action:
    """A new node is put whole; an update sets what the node reports, and bumps the
    version (so a concurrent create, placement, re-affirm or update serializes with it),
    only while no placement came since the read."""
    node = write.node
    if write.node_read is None:
        return put(node_item(node))
    values: dict[str, Any] = {
        ":owner": node.owner_org_id,
        ":gen": node.topology_gen,
        ":units": dict(node.unit_changed_at or {}),
        ":now": format_time(write.at),
        ":one": 1,
        ":v": write.node_read,
        ":placements": write.placements_read,
    }
    update = (
        f"SET ownerOrgId = :owner, topologyGen = :gen, {UNITS_CHANGED_AT} = :units, "
        "updatedAt = :now, createdAt = if_not_exists(createdAt, :now), "
    )
    if node.queue_url is not None:
        update += "queueUrl = :queue, "
        values[":queue"] = node.queue_url
    return {
        "Update": {
            "TableName": table(),
            "Key": to_attributes(node_key(node.id)),
            "UpdateExpression": update + "version = version + :one",
            "ConditionExpression": f"version = :v AND (attribute_not_exists({PLACEMENTS}) "
            f"OR {PLACEMENTS} = :placements)",
            "ExpressionAttributeValues": to_attributes(values),
        }
    }


def _access_action(write: NodePut) -> Action:
    """The node's owner and unit generations, kept in its list access item too, in the
    node's own write (which makes the item on registration; the orgs it names come with
    reservations): a list page derives its statuses from them without reading the node."""
    values = {
        ":owner": write.node.owner_org_id,
        ":list": node_pk(write.node.id),
        ":units": dict(write.node.unit_changed_at or {}),
        ":zero": 0,
        ":one": 1,
    }
    return {
        "Update": {
            "TableName": table(),
            "Key": to_attributes(access_key(write.node.id)),
            "UpdateExpression": f"SET ownerOrgId = :owner, {UNITS_CHANGED_AT} = :units, "
            f"{LIST_PK} = :list, version = if_not_exists(version, :zero) + :one",
            "ExpressionAttributeValues": to_attributes(values),
        }
    }


# How a node's own write is committed (an update's unit deletes fill the room).
WRITERS = (Writer(NodePut, node_put_actions),)
