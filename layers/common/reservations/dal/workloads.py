"""The scheduler's two writes, each one conditional TransactWriteItems: a placement, and a
workload that ended on its own."""

from __future__ import annotations

from typing import Any

from reservations.config import settings
from reservations.dal.idempotency import record_put
from reservations.dal.items import (
    PLACEMENTS,
    Item,
    ended_workload_item,
    node_key,
    placement_audit_item,
    reservation_key,
    to_attributes,
    unit_key,
    workload_end_audit_item,
    workload_item,
    workload_key,
)
from reservations.dal.transactions import commit
from reservations.models.idempotency import AnswerRecord
from reservations.models.writes import ItemVersion, PlacementWrite, WorkloadEnd

Action = dict[str, Any]


def commit_placement(write: PlacementWrite, answer: AnswerRecord | None = None) -> None:
    """All or nothing, with the idempotency record when there is one; :class:`WriteConflict`
    when anything the decision read changed, or a workload of this id appeared."""
    _commit(placement_transaction(write), write.write_id, answer)


def placement_transaction(write: PlacementWrite) -> list[Action]:
    """The node and the reservations governing the units, checked at their versions (a
    reclaim, re-affirm, create or node update since the read makes it fail); each unit
    claimed only at the version read and while unclaimed; the workload only if its id is
    new on the node."""
    node_id = write.node.id
    return [
        _node_placement(write.node),
        *(_version_check(reservation_key(node_id, r.id), r) for r in write.reservations),
        *(_claim(write, unit) for unit in write.units),
        _put(workload_item(node_id, write.workload), "attribute_not_exists(PK)"),
        _put(placement_audit_item(write), "attribute_not_exists(PK)"),
    ]


def commit_workload_end(end: WorkloadEnd, answer: AnswerRecord | None = None) -> None:
    """The workload leaves the node for its history and frees the units it still holds, all
    or nothing; :class:`WriteConflict` if any of them changed since it was read."""
    _commit(workload_end_transaction(end), end.write_id, answer)


def workload_end_transaction(end: WorkloadEnd) -> list[Action]:
    """Deleting the item also takes an open termination out of the sparse index."""
    workload = end.workload
    return [
        {
            "Delete": {
                "TableName": settings().table_name,
                "Key": to_attributes(workload_key(end.node_id, workload.id)),
                "ConditionExpression": "version = :v",
                "ExpressionAttributeValues": to_attributes({":v": workload.version}),
            }
        },
        _put(ended_workload_item(end)),
        *(_freed(end.node_id, unit) for unit in end.freed_units),
        _put(workload_end_audit_item(end), "attribute_not_exists(PK)"),
    ]


def _commit(actions: list[Action], token: str, answer: AnswerRecord | None) -> None:
    record_at = None
    if answer is not None:
        record_at = len(actions)
        actions.append(record_put(answer))
    commit(actions, token=token, record_at=record_at)


def _version_check(key: Item, read: ItemVersion) -> Action:
    return {
        "ConditionCheck": {
            "TableName": settings().table_name,
            "Key": to_attributes(key),
            "ConditionExpression": "version = :v",
            "ExpressionAttributeValues": to_attributes({":v": read.version}),
        }
    }


def _node_placement(node: ItemVersion) -> Action:
    """The node at the version read, its placements counted: a node update that read it
    before this claim then fails, and reads the claim. The version stays, so placements
    on one node never make each other retry."""
    return {
        "Update": {
            "TableName": settings().table_name,
            "Key": to_attributes(node_key(node.id)),
            "UpdateExpression": f"ADD {PLACEMENTS} :one",
            "ConditionExpression": "version = :v",
            "ExpressionAttributeValues": to_attributes({":v": node.version, ":one": 1}),
        }
    }


def _claim(write: PlacementWrite, unit: ItemVersion) -> Action:
    return {
        "Update": {
            "TableName": settings().table_name,
            "Key": to_attributes(unit_key(write.node.id, unit.id)),
            "UpdateExpression": "SET claimedBy = :claim, version = version + :one",
            "ConditionExpression": "version = :v AND attribute_not_exists(claimedBy)",
            "ExpressionAttributeValues": to_attributes(
                {":claim": write.workload.claim, ":v": unit.version, ":one": 1}
            ),
        }
    }


def _freed(node_id: str, unit: ItemVersion) -> Action:
    return {
        "Update": {
            "TableName": settings().table_name,
            "Key": to_attributes(unit_key(node_id, unit.id)),
            "UpdateExpression": "REMOVE claimedBy SET version = version + :one",
            "ConditionExpression": "version = :v",
            "ExpressionAttributeValues": to_attributes({":v": unit.version, ":one": 1}),
        }
    }


def _put(item: Item, condition: str | None = None) -> Action:
    put: dict[str, Any] = {"TableName": settings().table_name, "Item": to_attributes(item)}
    if condition is not None:
        put["ConditionExpression"] = condition
    return {"Put": put}
