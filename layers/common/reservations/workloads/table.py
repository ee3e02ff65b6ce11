"""The scheduler's two writes as TransactWriteItems: a placement, and a workload that ended
on its own."""

from __future__ import annotations

from datetime import datetime

from reservations.kernel.aws.actions import Action, delete, overwrite, put, table, version_check
from reservations.kernel.aws.codec import Item, to_attributes
from reservations.kernel.times import format_time
from reservations.kernel.writes import ItemVersion
from reservations.nodes import (
    PLACEMENTS,
    Writer,
    access_key,
    free_unit,
    node_key,
    reservation_key,
    unit_key,
    workload_history_item,
    workload_item,
    workload_key,
)
from reservations.workloads.writes import PlacementWrite, WorkloadEnd


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
    """The workload leaves the node for its history and frees the units it still holds;
    deleting the item also takes an open termination out of the sparse index."""
    workload = end.workload
    return [
        delete(workload_key(end.node_id, workload.id), ItemVersion(workload.id, workload.version)),
        overwrite(ended_workload_item(end)),
        *(free_unit(end.node_id, unit, end.at) for unit in end.freed_units),
    ]


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
            "ConditionExpression": "version = :v AND attribute_not_exists(claimedBy)",
            "ExpressionAttributeValues": to_attributes(
                {":claim": write.workload.claim, ":v": unit.version, ":one": 1}
            ),
        }
    }


def _optional_time(moment: datetime | None) -> str | None:
    return format_time(moment) if moment is not None else None


def ended_workload_item(end: WorkloadEnd) -> Item:
    """A workload that stopped on its own, out of the hot partition like a closed
    termination (outcome ``ended``), kept HISTORY_DAYS."""
    workload = end.workload
    termination_id = workload.termination.id if workload.termination else None
    ended_by = termination_id or end.write_id
    return {
        **workload_history_item(end.node_id, workload, end.at, ended_by),
        "terminationId": termination_id,
        "outcome": "ended",
        "createdAt": _optional_time(workload.created_at),
        "endedAt": format_time(end.at),
    }


# How its writes are committed (the wiring hands them to the node table).
WRITERS = (
    Writer.sized(PlacementWrite, placement_actions),
    Writer.sized(WorkloadEnd, workload_end_actions),
)
