"""The reclaim's one atomic, conditional write: a :class:`ReclaimWrite` as TransactWriteItems."""

from __future__ import annotations

from typing import Any

from reservations.kernel.aws.actions import Action, table, version_check
from reservations.kernel.aws.codec import to_attributes
from reservations.kernel.times import format_time
from reservations.nodes import (
    OPEN_TERMINATION,
    NewTermination,
    ReclaimWrite,
    TerminationState,
    Writer,
    reservation_key,
    topology_check,
    unit_key,
    workload_key,
)


def reclaim_actions(write: ReclaimWrite) -> list[Action]:
    """Conditioned on the version of every item read, and on the node's topology (a node
    update since the read may have put the reservation under review)."""
    node_id = write.node_id
    return [
        _reservation_update(write),
        topology_check(write.topology),
        *(version_check(unit_key(node_id, unit.id), unit.version) for unit in write.units),
        *(_termination_update(write, termination) for termination in write.terminations),
        *(version_check(workload_key(node_id, w.id), w.version) for w in write.unchanged_workloads),
    ]


def _reservation_update(write: ReclaimWrite) -> Action:
    """The new releases; only a version check when they do not change."""
    key = reservation_key(write.node_id, write.reservation.id)
    if write.released_after is None:
        return version_check(key, write.reservation.version)
    values = {
        ":released": list(write.released_after),
        ":now": format_time(write.at),
        ":one": 1,
        ":v": write.reservation.version,
    }
    return {
        "Update": {
            "TableName": table(),
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
        ":open": TerminationState.OPEN.value,
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
    if write.managing_org_ids:
        update += ", terminationManagingOrgIds = :managers"
        values[":managers"] = list(write.managing_org_ids)
    return {
        "Update": {
            "TableName": table(),
            "Key": to_attributes(workload_key(write.node_id, termination.workload.id)),
            "UpdateExpression": update,
            "ConditionExpression": "version = :v",
            "ExpressionAttributeNames": {"#state": "state"},
            "ExpressionAttributeValues": to_attributes(values),
        }
    }


# How its writes are committed (the wiring hands them to the node table).
WRITERS = (Writer.sized(ReclaimWrite, reclaim_actions),)
