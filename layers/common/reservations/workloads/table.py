"""The scheduler's two writes as TransactWriteItems: a placement, and a workload that ended
on its own."""

from __future__ import annotations

from reservations.capacity import take_back_actions as take_back_reservation_actions
from reservations.kernel.aws.actions import Action, delete, overwrite, put, table, version_check
from reservations.kernel.aws.codec import Item, to_attributes
from reservations.kernel.times import format_time
from reservations.kernel.writes import ItemVersion
from reservations.nodes import (
    PLACEMENTS,
    Writer,
    access_key,
    node_key,
    reservation_key,
    unit_key,
    workload_history_item,
    workload_item,
    workload_key,
)
from reservations.terminations import let_go_actions
from reservations.workloads.writes import (
    EndLetGo,
    PlacementWrite,
    TakeBackPlacement,
    WorkloadEnd,
)


def placement_actions(write: PlacementWrite) -> list[Action]:
    """The node and the reservations governing the units, checked at their versions (a
    reclaim, re-affirm, create or node update since the read makes it fail); each unit
    claimed only at the version read and while unclaimed; the workload only if its id is
    new on the node; its org named in the node's list access item, for the event feed."""
    node_id = write.node.id
    return [
        _node_placement(write.node),
        *(version_check(reservation_key(node_id, r.id), r.version) for r in write.reservations),
        *(_claim(write, unit) for unit in write.units),
        put(workload_item(node_id, write.workload)),
        _workload_org(write),
    ]


def _workload_org(write: PlacementWrite) -> Action:
    """The workload's org joins those the node's list access item names for the node's
    event feed (``workloadOrgIds``, a set; apart from ``namedOrgIds``, which decides the
    reservation list's 404). Its version moves, as with every change of an item; no write
    conditions on it, so placements never make each other retry."""
    return {
        "Update": {
            "TableName": table(),
            "Key": to_attributes(access_key(write.node.id)),
            "UpdateExpression": "SET version = if_not_exists(version, :zero) + :one "
            "ADD workloadOrgIds :org",
            "ExpressionAttributeValues": to_attributes(
                {":org": {write.workload.org_id}, ":zero": 0, ":one": 1}
            ),
        }
    }


def workload_end_actions(end: WorkloadEnd) -> list[Action]:
    """The workload leaves the node for its history and frees the units it still holds,
    or hands them over to the workload a take-back holds them for (``terminations``' rule
    and actions, as a report does); a waiting workload's holds are dropped; deleting the
    item also takes an open termination out of the sparse index."""
    workload = end.workload
    let_go = end.let_go or EndLetGo()
    return [
        delete(workload_key(end.node_id, workload.id), ItemVersion(workload.id, workload.version)),
        overwrite(ended_workload_item(end)),
        *let_go_actions(end.node_id, end.freed_units, let_go.handed, let_go.waiters, end.at),
        *(_drop_hold(end.node_id, unit) for unit in let_go.dropped),
    ]


def take_back_actions(write: TakeBackPlacement) -> list[Action]:
    """The placement's actions (its reservation checks left to the take-back's), each held
    unit held at its version read and while no other hold is on it, and the take-back's
    reclaim (``capacity``): the reservation at its version, the spot workloads terminated,
    at theirs. One transaction: a reclaim, a lending pass, a placement or another take-back
    that read any of them before makes one of the two fail and decide again."""
    placement = write.placement
    node_id = placement.node.id
    reservation = (
        take_back_reservation_actions(write.take_back)
        if write.take_back is not None
        else [
            version_check(reservation_key(node_id, write.reservation.id), write.reservation.version)
        ]
    )
    return [
        *placement_actions(placement),
        *(_hold(node_id, unit, placement.workload.claim) for unit in write.held),
        *reservation,
    ]


def _hold(node_id: str, unit: ItemVersion, claim: str) -> Action:
    """The unit held for the waiting workload: its spot workload keeps the claim until it
    stops; nothing else may be placed on it."""
    return {
        "Update": {
            "TableName": table(),
            "Key": to_attributes(unit_key(node_id, unit.id)),
            "UpdateExpression": "SET heldFor = :claim, version = version + :one",
            "ConditionExpression": "version = :v AND attribute_not_exists(heldFor)",
            "ExpressionAttributeValues": to_attributes(
                {":claim": claim, ":v": unit.version, ":one": 1}
            ),
        }
    }


def _drop_hold(node_id: str, unit: ItemVersion) -> Action:
    """A waiting workload ended: the unit is no longer held for it (its spot workload's
    claim stays until the node reports it stopped)."""
    return {
        "Update": {
            "TableName": table(),
            "Key": to_attributes(unit_key(node_id, unit.id)),
            "UpdateExpression": "SET version = version + :one REMOVE heldFor",
            "ConditionExpression": "version = :v",
            "ExpressionAttributeValues": to_attributes({":v": unit.version, ":one": 1}),
        }
    }


def _node_placement(node: ItemVersion) -> Action:
    """The node at the version read, its placements counted: a node update that read it
    before this claim then fails, and reads the claim. The version stays, so placements
    on one node never make each other retry."""
    return {
        "Update": {
            "TableName": table(),
            "Key": to_attributes(node_key(node.id)),
            "UpdateExpression": f"ADD {PLACEMENTS} :one",
            "ConditionExpression": "version = :v",
            "ExpressionAttributeValues": to_attributes({":v": node.version, ":one": 1}),
        }
    }


def _claim(write: PlacementWrite, unit: ItemVersion) -> Action:
    return {
        "Update": {
            "TableName": table(),
            "Key": to_attributes(unit_key(write.node.id, unit.id)),
            "UpdateExpression": "SET claimedBy = :claim, version = version + :one",
            "ConditionExpression": "version = :v AND attribute_not_exists(claimedBy) "
            "AND attribute_not_exists(heldFor)",
            "ExpressionAttributeValues": to_attributes(
                {":claim": write.workload.claim, ":v": unit.version, ":one": 1}
            ),
        }
    }


def ended_workload_item(end: WorkloadEnd) -> Item:
    """A workload that stopped on its own, out of the hot partition like a closed
    termination (outcome ``ended``), with its own use, kept ``HistoryRetentionDays``."""
    workload = end.workload
    termination_id = workload.termination.id if workload.termination else None
    ended_by = termination_id or end.write_id
    return {
        **workload_history_item(end.node_id, workload, end.at, ended_by, end.gpus),
        "terminationId": termination_id,
        "outcome": "ended",
        "endedAt": format_time(end.at),
    }


# How its writes are committed (the wiring hands them to the node table).
WRITERS = (
    Writer.sized(PlacementWrite, placement_actions),
    Writer.sized(WorkloadEnd, workload_end_actions),
    Writer.sized(TakeBackPlacement, take_back_actions),
)
