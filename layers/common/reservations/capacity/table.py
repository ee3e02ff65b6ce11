"""The capacity slice's atomic, conditional writes as TransactWriteItems: a reclaim
(:class:`ReclaimWrite`), a lending policy's change (:class:`PolicyChange`)."""

from __future__ import annotations

from typing import Any

from reservations.capacity.writes import (
    DeadlineChange,
    NewTermination,
    PolicyChange,
    ReclaimWrite,
)
from reservations.kernel.aws.actions import Action, table, version_check
from reservations.kernel.aws.codec import to_attributes
from reservations.kernel.times import format_moment, format_time
from reservations.nodes import (
    OPEN_TERMINATION,
    TerminationState,
    Writer,
    lending_item,
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
        *(_deadline_update(write.node_id, change) for change in write.deadline_changes),
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
        ":now": format_moment(write.at),
        ":at": format_moment(termination.terminate_at or write.at),
        ":open": TerminationState.OPEN.value,
        ":one": 1,
        ":v": termination.workload.version,
    }
    update = (
        f"SET #state = :terminating, terminationId = :tid, terminationReservationId = :res, "
        f"terminationRequestedAt = :now, terminateAt = :at, {OPEN_TERMINATION} = :open, "
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


# What a moved deadline starts afresh: the outbox's record of the sends of the old one (the
# new deadline is a new message, under a new de-duplication id, that the sweeper delivers
# if the reclaim's own send does not go out), and any flag.
_FRESH_OUTBOX = (
    "REMOVE deliveries, lastDeliveredAt, stuckAt, terminationReportedDeliveries, "
    "terminationLastReportedAt, terminationFailedReports"
)


def _deadline_update(node_id: str, change: DeadlineChange) -> Action:
    """A termination under way gets the earlier deadline, still under its own id."""
    values = {
        ":at": format_moment(change.terminate_at),
        ":changes": change.changes,
        ":open": TerminationState.OPEN.value,
        ":tid": change.termination_id,
        ":one": 1,
        ":v": change.workload.version,
    }
    return {
        "Update": {
            "TableName": table(),
            "Key": to_attributes(workload_key(node_id, change.workload.id)),
            "UpdateExpression": f"SET terminateAt = :at, terminationDeadlineChanges = :changes, "
            f"{OPEN_TERMINATION} = :open, version = version + :one {_FRESH_OUTBOX}",
            "ConditionExpression": "version = :v AND terminationId = :tid",
            "ExpressionAttributeValues": to_attributes(values),
        }
    }


def policy_actions(write: PolicyChange) -> list[Action]:
    """The reservation's policy set (or removed), its version bumped where it is still at the
    version read; the node's topology as read (a review since would forbid the change)."""
    values: dict[str, Any] = {
        ":now": format_time(write.at),
        ":one": 1,
        ":v": write.reservation.version,
    }
    change = "SET updatedAt = :now, version = version + :one"
    if write.after is None:
        change += " REMOVE lending"
    else:
        change += ", lending = :policy"
        values[":policy"] = lending_item(write.after)
    update: Action = {
        "Update": {
            "TableName": table(),
            "Key": to_attributes(reservation_key(write.node_id, write.reservation.id)),
            "UpdateExpression": change,
            "ConditionExpression": "version = :v",
            "ExpressionAttributeValues": to_attributes(values),
        }
    }
    return [update, topology_check(write.topology)]


# How its writes are committed (the wiring hands them to the node table).
WRITERS = (Writer.sized(ReclaimWrite, reclaim_actions), Writer.sized(PolicyChange, policy_actions))
