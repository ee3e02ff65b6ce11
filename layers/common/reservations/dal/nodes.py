"""The node operator's writes: a node registered or updated, a reservation re-affirmed.
Each is one conditional TransactWriteItems on the versions it was decided from."""

from __future__ import annotations

from typing import Any

from reservations.config import node_queue_settings, settings
from reservations.dal import clients
from reservations.dal.idempotency import record_put
from reservations.dal.items import (
    AUDIT_PREFIX,
    PLACEMENTS,
    UNITS_CHANGED_AT,
    Item,
    access_key,
    audit_pk,
    format_time,
    node_item,
    node_key,
    reservation_key,
    to_attributes,
    unit_item,
    unit_key,
)
from reservations.dal.queues import ensure_node_queue
from reservations.dal.transactions import commit
from reservations.models.idempotency import AnswerRecord
from reservations.models.writes import ItemVersion, NodeWrite, ReaffirmWrite

Action = dict[str, Any]
MAX_ACTIONS = 100  # DynamoDB's limit for one TransactWriteItems


def node_audit_pk(node_id: str) -> str:
    """A node's own audit records, beside its reservations' (``AUDIT#<node>#<res>``)."""
    return f"{AUDIT_PREFIX}{node_id}"


def make_node_queue(node_id: str) -> str:
    """The node's spot-termination queue, made if missing (CreateQueue is idempotent)."""
    prefix, dead_letter_arn = node_queue_settings()
    return ensure_node_queue(clients.sqs(), prefix, node_id, dead_letter_arn)


def commit_node(write: NodeWrite) -> None:
    """All or nothing, in one transaction whatever the number of units and reservations;
    :class:`WriteConflict` when the node or a unit is no longer as read."""
    # The token makes the SDK's own retry of a committed write idempotent.
    commit(node_transaction(write), token=write.write_id)


def node_transaction(write: NodeWrite) -> list[Action]:
    """The node item (its generation, owner, each unit's generation of last change; on the
    version and the placement count read), its list access item (the same owner and
    generations, which every page of the reservation list reads), every new or changed unit
    (at most 64), the audit record: at most 67 actions. The unit items to delete fill the
    rest, up to DynamoDB's 100 (at least 33): units the node no longer lists are invisible
    to every call already (``items.snapshot_from_items``), so a delete that does not fit is
    left for the next update. A unit claimed since the read moves the node's placement
    count, so the update fails even when that unit's delete did not fit."""
    actions = [
        _node_action(write),
        _access_action(write),
        *(_put(unit_item(write.node.id, put.unit), put.read) for put in write.units),
        _put(_audit_item(write), None),
    ]
    room = MAX_ACTIONS - len(actions)
    deletes = [*write.removed, *write.leftovers][:room]
    return actions + [_delete(unit_key(write.node.id, unit.id), unit) for unit in deletes]


def _table() -> str:
    return settings().table_name


def _as_read(read: int | None) -> dict[str, Any]:
    if read is None:
        return {"ConditionExpression": "attribute_not_exists(PK)"}
    return {
        "ConditionExpression": "version = :v",
        "ExpressionAttributeValues": {":v": {"N": str(read)}},
    }


def _put(item: Item, read: int | None) -> Action:
    return {"Put": {"TableName": _table(), "Item": to_attributes(item), **_as_read(read)}}


def _delete(key: Item, read: ItemVersion) -> Action:
    return {"Delete": {"TableName": _table(), "Key": to_attributes(key), **_as_read(read.version)}}


def _node_action(write: NodeWrite) -> Action:
    """A new node is put whole; an update sets what the node reports, and bumps the
    version (so a concurrent create, placement, re-affirm or update serializes with it),
    only while no placement came since the read."""
    node = write.node
    if write.node_read is None:
        return _put(node_item(node), None)
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
            "TableName": _table(),
            "Key": to_attributes(node_key(node.id)),
            "UpdateExpression": update + "version = version + :one",
            "ConditionExpression": f"version = :v AND (attribute_not_exists({PLACEMENTS}) "
            f"OR {PLACEMENTS} = :placements)",
            "ExpressionAttributeValues": to_attributes(values),
        }
    }


def _access_action(write: NodeWrite) -> Action:
    """The node's owner and unit generations, kept in its list access item too, in the
    node's own write (which makes the item on registration; the orgs it names come with
    reservations): a list page derives its statuses from them without reading the node."""
    values = {
        ":owner": write.node.owner_org_id,
        ":units": dict(write.node.unit_changed_at or {}),
        ":zero": 0,
        ":one": 1,
    }
    return {
        "Update": {
            "TableName": _table(),
            "Key": to_attributes(access_key(write.node.id)),
            "UpdateExpression": f"SET ownerOrgId = :owner, {UNITS_CHANGED_AT} = :units, "
            "version = if_not_exists(version, :zero) + :one",
            "ExpressionAttributeValues": to_attributes(values),
        }
    }


def _audit_item(write: NodeWrite) -> Item:
    stamp = format_time(write.at)
    return {
        "PK": node_audit_pk(write.node.id),
        "SK": f"{stamp}#{write.write_id}",
        "action": "register-node" if write.node_read is None else "update-node",
        "nodeId": write.node.id,
        "callerOrgId": write.caller_org_id,
        "callerKeyId": write.caller_key_id,
        "ownerOrgId": write.node.owner_org_id,
        "topologyGen": write.node.topology_gen,
        "unitsPut": sorted(put.unit.id for put in write.units),
        "unitsRemoved": sorted(unit.id for unit in write.removed),
        "unitsChanged": list(write.changed_unit_ids),
        # How many reservations the update puts under review, as it read them (their
        # items are not written: the review is derived from the node's generations).
        "reservationsReviewed": write.reviewed,
        "at": stamp,
    }


def commit_reaffirm(write: ReaffirmWrite, answer: AnswerRecord | None = None) -> None:
    """The reservation out of review, conditioned on it and on the node as read; with the
    Idempotency-Key's record when there is one."""
    actions = [
        _reaffirm_update(write),
        {
            "ConditionCheck": {
                "TableName": _table(),
                "Key": to_attributes(node_key(write.node_id)),
                **_as_read(write.node.version),
            }
        },
        _put(_reaffirm_audit_item(write), None),
    ]
    record_at = None
    if answer is not None:
        record_at = len(actions)
        actions.append(record_put(answer))
    commit(actions, token=write.write_id, record_at=record_at)


def _reaffirm_update(write: ReaffirmWrite) -> Action:
    values: dict[str, Any] = {
        ":status": write.status.value,
        ":gen": write.topology_gen,
        ":none": [],
        ":now": format_time(write.at),
        ":one": 1,
        ":v": write.reservation.version,
    }
    update = "SET #status = :status, releasedUnitIds = :none, updatedAt = :now, "
    if write.topology_gen is not None:
        update += "topologyGen = :gen, "
    else:
        del values[":gen"]
    return {
        "Update": {
            "TableName": _table(),
            "Key": to_attributes(reservation_key(write.node_id, write.reservation.id)),
            "UpdateExpression": update + "version = version + :one",
            "ConditionExpression": "version = :v",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": to_attributes(values),
        }
    }


def _reaffirm_audit_item(write: ReaffirmWrite) -> Item:
    stamp = format_time(write.at)
    return {
        "PK": audit_pk(write.node_id, write.reservation.id),
        "SK": f"{stamp}#{write.write_id}",
        "action": "reaffirm",
        "nodeId": write.node_id,
        "reservationId": write.reservation.id,
        "callerOrgId": write.caller_org_id,
        "callerKeyId": write.caller_key_id,
        "reason": write.reason,
        "status": write.status.value,
        "topologyGen": write.topology_gen,
        "at": stamp,
    }
