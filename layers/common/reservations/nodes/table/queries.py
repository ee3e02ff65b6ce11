"""The Query every read of a node's partition starts from."""

from __future__ import annotations

from typing import Any

from reservations.kernel.aws.actions import table
from reservations.kernel.aws.codec import to_attributes
from reservations.nodes.table.keys import ACCESS_SK, node_pk


def up_to_access(node_id: str, first: str) -> dict[str, Any]:
    """The strongly consistent Query of the node's partition from ``first`` up to its list
    access item, which sorts after the reservations, units and live workloads."""
    return {
        "TableName": table(),
        "KeyConditionExpression": "PK = :pk AND SK BETWEEN :first AND :access",
        "ExpressionAttributeValues": to_attributes(
            {":pk": node_pk(node_id), ":first": first, ":access": ACCESS_SK}
        ),
        "ConsistentRead": True,
    }
