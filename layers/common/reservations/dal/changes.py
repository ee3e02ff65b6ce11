"""A release or a cancel as one TransactWriteItems: the reservation's item conditioned on the
version read, the audit record, and the Idempotency-Key's record when there is one."""

from __future__ import annotations

from typing import Any

from reservations.config import settings
from reservations.dal.idempotency import record_put
from reservations.dal.items import change_audit_item, reservation_key, to_attributes
from reservations.dal.transactions import commit, topology_check
from reservations.models.changes import ReservationChange
from reservations.models.idempotency import AnswerRecord
from reservations.models.times import format_time

Action = dict[str, Any]


def commit_change(change: ReservationChange, answer: AnswerRecord | None = None) -> None:
    """All or nothing, on the reservation and the node's topology as read; :class:`WriteConflict`
    (with the kept answer that stood in the way)."""
    actions = [_reservation_action(change), topology_check(change.topology), _audit_put(change)]
    record_at = None
    if answer is not None:
        record_at = len(actions)
        actions.append(record_put(answer))
    commit(actions, token=change.change_id, record_at=record_at)


def _reservation_action(change: ReservationChange) -> Action:
    """The new status and releases; a version check alone when neither changes."""
    table = settings().table_name
    key = to_attributes(reservation_key(change.node_id, change.reservation.id))
    version = {":v": {"N": str(change.reservation.version)}}
    if not change.writes_reservation:
        check = {"ConditionExpression": "version = :v", "ExpressionAttributeValues": version}
        return {"ConditionCheck": {"TableName": table, "Key": key, **check}}
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
        "TableName": table,
        "Key": key,
        "UpdateExpression": "SET " + ", ".join(sets),
        "ConditionExpression": "version = :v",
        "ExpressionAttributeValues": {**to_attributes(values), **version},
    }
    if names:
        update["ExpressionAttributeNames"] = names
    return {"Update": update}


def _audit_put(change: ReservationChange) -> Action:
    return {
        "Put": {
            "TableName": settings().table_name,
            "Item": to_attributes(change_audit_item(change)),
            "ConditionExpression": "attribute_not_exists(PK)",
        }
    }
