"""The node operator's writes: a node registered or updated, a reservation re-affirmed.
Each is one conditional TransactWriteItems on the versions it was decided from."""

from __future__ import annotations

from typing import Any

from reservations.config import node_queue_settings, settings
from reservations.dal import clients
from reservations.dal.idempotency import record_put
from reservations.dal.items import (
    AUDIT_PREFIX,
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
from reservations.models.writes import ItemVersion, NodeWrite, ReaffirmWrite, UnitPut

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
    """All or nothing when it fits one transaction (up to ~95 units put or removed);
    :class:`WriteConflict` when any item is no longer as read."""
    *early, final = node_transactions(write)
    for chunk in early:
        commit(chunk)
    # The token makes the SDK's own retry of a committed write idempotent.
    commit(final, token=write.write_id)


def node_transactions(write: NodeWrite) -> list[list[Action]]:
    """The write as transactions of at most 100 actions. The last holds the node (its new
    generation), every review, the units that cause them and the audit record, so they land
    together: should the last fail after earlier ones landed, the retry reads those units
    as still changed and reviews again. Other unit puts and removals fill the rest of it;
    what does not fit goes first, each chunk conditioned on the node as read (a concurrent
    update or create stops it): a node of hundreds of units registered at once, or most of
    them removed, and the retry finds them done. Only beyond about 97 reviews and their
    units do some of those go first too: a reservation put in review a moment early
    withholds its units, never gives them."""
    head = [_node_action(write), _access_action(write)]
    audit = _put(_audit_item(write), None)
    reviews = [_review(write, reservation) for reservation in write.to_review]
    units = {
        **{unit.id: _delete(unit_key(write.node.id, unit.id), unit) for unit in write.removed},
        **{put.unit.id: _unit_put(write, put) for put in write.units if put.read is not None},
        **{put.unit.id: _unit_put(write, put) for put in write.units if put.read is None},
    }
    held = [action for unit_id, action in units.items() if unit_id in write.reviewed_units]
    free = [action for unit_id, action in units.items() if unit_id not in write.reviewed_units]
    # Last-transaction candidates, most needed first; the ones that do not fit go early.
    ordered = [*reviews, *held, *free]
    kept = MAX_ACTIONS - len(head) - 1
    final = [*head, *ordered[:kept], audit]
    early = ordered[kept:]
    guard = _node_guard(write)
    step = MAX_ACTIONS - 1
    chunks = [[guard, *early[start : start + step]] for start in range(0, len(early), step)]
    return [*chunks, final]


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


def _node_guard(write: NodeWrite) -> Action:
    key = to_attributes(node_key(write.node.id))
    return {"ConditionCheck": {"TableName": _table(), "Key": key, **_as_read(write.node_read)}}


def _unit_put(write: NodeWrite, put: UnitPut) -> Action:
    return _put(unit_item(write.node.id, put.unit), put.read)


def _node_action(write: NodeWrite) -> Action:
    """A new node is put whole; an update sets what the node reports, and bumps the
    version (so a concurrent create, re-affirm or update serializes with it)."""
    node = write.node
    if write.node_read is None:
        return _put(node_item(node), None)
    values = {
        ":owner": node.owner_org_id,
        ":gen": node.topology_gen,
        ":now": format_time(write.at),
        ":one": 1,
        ":v": write.node_read,
    }
    update = (
        "SET ownerOrgId = :owner, topologyGen = :gen, updatedAt = :now, "
        "createdAt = if_not_exists(createdAt, :now), "
    )
    if node.queue_url is not None:
        update += "queueUrl = :queue, "
        values[":queue"] = node.queue_url
    return {
        "Update": {
            "TableName": _table(),
            "Key": to_attributes(node_key(node.id)),
            "UpdateExpression": update + "version = version + :one",
            "ConditionExpression": "version = :v",
            "ExpressionAttributeValues": to_attributes(values),
        }
    }


def _access_action(write: NodeWrite) -> Action:
    """The node's owner, kept in its list access item too, in the node's own write (which
    makes the item on registration; the orgs it names come with reservations)."""
    values = {":owner": write.node.owner_org_id, ":zero": 0, ":one": 1}
    return {
        "Update": {
            "TableName": _table(),
            "Key": to_attributes(access_key(write.node.id)),
            "UpdateExpression": "SET ownerOrgId = :owner, "
            "version = if_not_exists(version, :zero) + :one",
            "ExpressionAttributeValues": to_attributes(values),
        }
    }


def _review(write: NodeWrite, reservation: ItemVersion) -> Action:
    values = {
        ":review": "needs-review",
        ":now": format_time(write.at),
        ":one": 1,
        ":v": reservation.version,
    }
    return {
        "Update": {
            "TableName": _table(),
            "Key": to_attributes(reservation_key(write.node.id, reservation.id)),
            "UpdateExpression": "SET #status = :review, updatedAt = :now, version = version + :one",
            "ConditionExpression": "version = :v",
            "ExpressionAttributeNames": {"#status": "status"},
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
        "reservationsToReview": sorted(r.id for r in write.to_review),
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
