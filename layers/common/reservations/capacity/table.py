"""The capacity slice's atomic, conditional writes as TransactWriteItems: a reclaim
(:class:`ReclaimWrite`), a lending policy's change (:class:`PolicyChange`)."""

from __future__ import annotations

from typing import Any

from reservations.capacity.writes import (
    DeadlineChange,
    LendingWrite,
    NewTermination,
    PolicyChange,
    ReclaimWrite,
)
from reservations.kernel.aws.actions import Action, assignments, table, version_check
from reservations.kernel.aws.codec import to_attributes
from reservations.kernel.times import format_event_time, format_moment, format_time
from reservations.nodes import (
    LEND_AT,
    OPEN_TERMINATION,
    TerminationState,
    Writer,
    lending_attributes,
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
        *_on_workloads(write),
    ]


def take_back_actions(write: ReclaimWrite) -> list[Action]:
    """A placement's take-back (``workloads``): the reclaim's actions on the reservation
    and on the workloads it terminates or reads, in the placement's own transaction, which
    claims or holds the units at the versions read and checks the node's version (so
    neither the units' checks nor the topology's are repeated here: one transaction may
    name an item once)."""
    return [_reservation_update(write), *_on_workloads(write)]


def _on_workloads(write: ReclaimWrite) -> list[Action]:
    node_id = write.node_id
    return [
        *(_termination_update(write, termination) for termination in write.terminations),
        *(_deadline_update(write.node_id, change) for change in write.deadline_changes),
        *(version_check(workload_key(node_id, w.id), w.version) for w in write.unchanged_workloads),
    ]


def _reservation_update(write: ReclaimWrite) -> Action:
    """The new releases (and what its lending policy keeps of the units taken back); only a
    version check when they do not change."""
    key = reservation_key(write.node_id, write.reservation.id)
    if write.released_after is None:
        return version_check(key, write.reservation.version)
    lent = lending_attributes(write.lending_after) if write.lending_after else {}
    sets, removes, values = assignments(lent, "lend")
    values.update(
        {
            ":released": list(write.released_after),
            ":now": format_time(write.at),
            ":one": 1,
            ":v": write.reservation.version,
        }
    )
    update = ", ".join(
        ["releasedUnitIds = :released", "updatedAt = :now", "version = version + :one", *sets]
    )
    return {
        "Update": {
            "TableName": table(),
            "Key": to_attributes(key),
            "UpdateExpression": "SET "
            + update
            + (" REMOVE " + ", ".join(removes) if removes else ""),
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
    """The reservation's policy set (or removed) with the rest of its lending attributes
    (its idle time, its place in the lending index), its version bumped where it is still at
    the version read; the node's topology as read (a review since would forbid the change)."""
    assert write.lending_after is not None  # a policy's change always says how it leaves it
    sets, removes, values = assignments(lending_attributes(write.lending_after), "lend")
    values.update({":now": format_time(write.at), ":one": 1, ":v": write.reservation.version})
    change = "SET " + ", ".join(["updatedAt = :now", "version = version + :one", *sets])
    if removes:
        change += " REMOVE " + ", ".join(removes)
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


def lending_actions(write: LendingWrite) -> list[Action]:
    """A lending pass on one reservation: its releases, its units' records and its next
    place in the lending index where it is still at the version and the place read (its
    version bumped only when units are lent); each lent unit at its version read; the
    node's topology as read (a review since would forbid it)."""
    after = write.after
    sets, removes, values = assignments(lending_attributes(after), "lend")
    values[":v"] = write.reservation.version
    if write.unit_ids:
        sets += ["releasedUnitIds = :released", "updatedAt = :now", "version = version + :one"]
        values.update(
            {":released": list(after.released_unit_ids), ":now": format_time(write.at), ":one": 1}
        )
    if write.lend_read is None:
        condition = f"version = :v AND attribute_not_exists({LEND_AT})"
    else:
        condition = f"version = :v AND {LEND_AT} = :lendRead"
        values[":lendRead"] = format_event_time(write.lend_read)
    update: Action = {
        "Update": {
            "TableName": table(),
            "Key": to_attributes(reservation_key(write.node_id, write.reservation.id)),
            "UpdateExpression": "SET "
            + ", ".join(sets)
            + (" REMOVE " + ", ".join(removes) if removes else ""),
            "ConditionExpression": condition,
            "ExpressionAttributeValues": to_attributes(values),
        }
    }
    units = [version_check(unit_key(write.node_id, u.id), u.version) for u in write.units]
    return [update, *units, topology_check(write.topology)]


# How its writes are committed (the wiring hands them to the node table).
WRITERS = (
    Writer.sized(ReclaimWrite, reclaim_actions),
    Writer.sized(PolicyChange, policy_actions),
    Writer.sized(LendingWrite, lending_actions),
)
