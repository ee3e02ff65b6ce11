"""The reclaim's one atomic, conditional write: a :class:`ReclaimWrite` as TransactWriteItems."""

from __future__ import annotations

from typing import Any

from reservations.config import settings
from reservations.dal.idempotency import record_put
from reservations.dal.items import (
    OPEN,
    OPEN_TERMINATION,
    Item,
    audit_item,
    reservation_key,
    to_attributes,
    unit_key,
    workload_key,
)
from reservations.dal.transactions import commit, topology_check
from reservations.models.idempotency import AnswerRecord
from reservations.models.times import format_time
from reservations.models.writes import ItemVersion, NewTermination, ReclaimWrite

Action = dict[str, Any]


def commit_reclaim(write: ReclaimWrite, answer: AnswerRecord | None = None) -> None:
    """Write it all or nothing, with the idempotency record when there is one;
    :class:`WriteConflict` (carrying the kept answer if a record stood in the way) otherwise."""
    actions = reclaim_transaction(write)
    record_at = None
    if answer is not None:
        record_at = len(actions)
        actions.append(record_put(answer))
    commit(actions, token=write.reclaim_id, record_at=record_at)


def reclaim_transaction(write: ReclaimWrite) -> list[Action]:
    """The TransactWriteItems for ``write``: conditioned on the version of every item read,
    and on the node's topology (a node update since the read may have put the reservation
    under review)."""
    node_id = write.node_id
    return [
        _reservation_update(write),
        topology_check(write.topology),
        *(_version_check(unit_key(node_id, unit.id), unit) for unit in write.units),
        *(_termination_update(write, termination) for termination in write.terminations),
        *(_version_check(workload_key(node_id, w.id), w) for w in write.unchanged_workloads),
        _audit_put(write),
    ]


def _version_check(key: Item, read: ItemVersion) -> Action:
    return {
        "ConditionCheck": {
            "TableName": settings().table_name,
            "Key": to_attributes(key),
            "ConditionExpression": "version = :v",
            "ExpressionAttributeValues": {":v": {"N": str(read.version)}},
        }
    }


def _reservation_update(write: ReclaimWrite) -> Action:
    """The new releases; only a version check when they do not change."""
    key = reservation_key(write.node_id, write.reservation.id)
    if write.released_after is None:
        return _version_check(key, write.reservation)
    values = {
        ":released": list(write.released_after),
        ":now": format_time(write.at),
        ":one": 1,
        ":v": write.reservation.version,
    }
    return {
        "Update": {
            "TableName": settings().table_name,
            "Key": to_attributes(key),
            "UpdateExpression": "SET releasedUnitIds = :released, updatedAt = :now, "
            "version = version + :one",
            "ConditionExpression": "version = :v",
            "ExpressionAttributeValues": to_attributes(values),
        }
    }


def _termination_update(write: ReclaimWrite, termination: NewTermination) -> Action:
    """The workload becomes the outbox: terminating, with its termination, in the index."""
    values: dict[str, Any] = {
        ":terminating": "terminating",
        ":tid": termination.termination_id,
        ":res": write.reservation.id,
        ":now": format_time(write.at),
        ":open": OPEN,
        ":one": 1,
        ":v": termination.workload.version,
    }
    update = (
        f"SET #state = :terminating, terminationId = :tid, terminationReservationId = :res, "
        f"terminationRequestedAt = :now, {OPEN_TERMINATION} = :open, "
        f"version = version + :one"
    )
    if write.reason is not None:
        update += ", terminationReason = :reason"
        values[":reason"] = write.reason
    return {
        "Update": {
            "TableName": settings().table_name,
            "Key": to_attributes(workload_key(write.node_id, termination.workload.id)),
            "UpdateExpression": update,
            "ConditionExpression": "version = :v",
            "ExpressionAttributeNames": {"#state": "state"},
            "ExpressionAttributeValues": to_attributes(values),
        }
    }


def _audit_put(write: ReclaimWrite) -> Action:
    return {
        "Put": {
            "TableName": settings().table_name,
            "Item": to_attributes(audit_item(write)),
            "ConditionExpression": "attribute_not_exists(PK)",
        }
    }
