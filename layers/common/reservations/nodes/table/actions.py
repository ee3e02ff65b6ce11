"""The actions of a node's partition that several writes compose: the node's topology as
read, a reservation still at its place in the clock's index, the list access item naming
orgs."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from reservations.kernel.aws.actions import Action, table
from reservations.kernel.aws.codec import epoch, to_attributes
from reservations.nodes.models.writes import TopologyRead
from reservations.nodes.table.items import named_attribute
from reservations.nodes.table.keys import CLOCK_AT, LIST_PK, access_key, node_key, node_pk


def topology_check(read: TopologyRead) -> Action:
    """The node's topology generation still as read: only a node update moves it, and only
    a node update changes which reservations a topology change has put under review."""
    check: Action = {
        "TableName": table(),
        "Key": to_attributes(node_key(read.node_id)),
        "ConditionExpression": "attribute_not_exists(topologyGen)",
    }
    if read.topology_gen is not None:
        check["ConditionExpression"] = "topologyGen = :gen"
        check["ExpressionAttributeValues"] = {":gen": {"N": str(read.topology_gen)}}
    return {"ConditionCheck": check}


def clock_read_condition(read: str | None) -> tuple[str, dict[str, Any]]:
    """The condition that a reservation is still at the place in the clock's index it was
    read at (``read``: its ``clockAt`` as read, ``Reservation.clock_read``; None when it had
    none), and its values: a moment fired moves it without bumping the version."""
    if read is None:
        return f"attribute_not_exists({CLOCK_AT})", {}
    return f"{CLOCK_AT} = :clockRead", {":clockRead": read}


def named_sets(named: Mapping[str, datetime]) -> tuple[list[str], dict[str, str], dict[str, int]]:
    """``named`` as the list access item's attributes (``items.NAMED_UNTIL``): the SET
    clauses, their names and their values."""
    orgs = sorted(named)
    sets = [f"#n{i} = :n{i}" for i in range(len(orgs))]
    names = {f"#n{i}": named_attribute(org) for i, org in enumerate(orgs)}
    values = {f":n{i}": epoch(named[org]) for i, org in enumerate(orgs)}
    return sets, names, values


def name_orgs(
    node_id: str, named: Mapping[str, datetime], owner_org_id: str | None = None
) -> Action:
    """The node's list access naming each org of ``named`` until its moment, its version
    bumped; with ``owner_org_id`` (a create), the node's owner and the item's place in the
    node's list index set too, so that the item is whole however it was left before."""
    sets, names, moments = named_sets(named)
    clauses = ["version = if_not_exists(version, :zero) + :one", *sets]
    values: dict[str, Any] = {**moments, ":zero": 0, ":one": 1}
    if owner_org_id is not None:
        clauses = ["ownerOrgId = :owner", f"{LIST_PK} = :list", *clauses]
        values |= {":owner": owner_org_id, ":list": node_pk(node_id)}
    update: Action = {
        "TableName": table(),
        "Key": to_attributes(access_key(node_id)),
        "UpdateExpression": "SET " + ", ".join(clauses),
        "ExpressionAttributeValues": to_attributes(values),
    }
    if names:
        update["ExpressionAttributeNames"] = names
    return {"Update": update}
