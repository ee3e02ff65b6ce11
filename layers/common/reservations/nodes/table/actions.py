"""The actions of a node's partition that several writes compose: the node's topology as
read, the list access item's named orgs."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from reservations.kernel.aws.actions import Action, table
from reservations.kernel.aws.codec import epoch, to_attributes
from reservations.nodes.models.writes import TopologyRead
from reservations.nodes.table.items import named_attribute
from reservations.nodes.table.keys import node_key


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


def named_sets(named: Mapping[str, datetime]) -> tuple[list[str], dict[str, str], dict[str, int]]:
    """``named`` as the list access item's attributes (``items.NAMED_UNTIL``): the SET
    clauses, their names and their values."""
    orgs = sorted(named)
    sets = [f"#n{i} = :n{i}" for i in range(len(orgs))]
    names = {f"#n{i}": named_attribute(org) for i, org in enumerate(orgs)}
    values = {f":n{i}": epoch(named[org]) for i, org in enumerate(orgs)}
    return sets, names, values
