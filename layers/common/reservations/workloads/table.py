"""The scheduler's two writes as TransactWriteItems: a placement, and a workload that ended
on its own."""

from __future__ import annotations

from reservations.kernel.aws.actions import Action, delete, overwrite, put, table, version_check
from reservations.kernel.aws.codec import to_attributes
from reservations.kernel.writes import ItemVersion
from reservations.nodes import (
    PLACEMENTS,
    PlacementWrite,
    WorkloadEnd,
    Writer,
    access_key,
    ended_workload_item,
    free_unit,
    node_key,
    reservation_key,
    unit_key,
    workload_item,
    workload_key,
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
    """The workload leaves the node for its history and frees the units it still holds;
    deleting the item also takes an open termination out of the sparse index."""
    workload = end.workload
    return [
        delete(workload_key(end.node_id, workload.id), ItemVersion(workload.id, workload.version)),
        overwrite(ended_workload_item(end)),
        *(free_unit(end.node_id, unit) for unit in end.freed_units),
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


# How its writes are committed (the wiring hands them to the node table).
WRITERS = (
    Writer.sized(PlacementWrite, placement_actions),
    Writer.sized(WorkloadEnd, workload_end_actions),
)
