"""The reads of ``GET /v1/nodes/{nodeId}`` and of a node's workloads: each one request
(the node without its units' ids aside, an item from before the node kept them; and a
workload not on the node, whose latest history item is one Query more)."""

from __future__ import annotations

from typing import Any

from reservations.kernel.aws import clients
from reservations.kernel.aws.actions import table
from reservations.kernel.aws.codec import from_attributes, to_attributes
from reservations.kernel.aws.queries import batch_get, get_item, query_items
from reservations.nodes.models.partition import Node, Workload
from reservations.nodes.models.reads import EndedWorkload, WorkloadsRead
from reservations.nodes.table.items import access_from_item, node_from_item, workload_from_item
from reservations.nodes.table.keys import (
    ACCESS_SK,
    NODE_SK,
    UNIT_PREFIX,
    WORKLOAD_PREFIX,
    node_key,
    node_pk,
    workload_history_pk,
    workload_history_prefix,
    workload_key,
)
from reservations.nodes.table.queries import up_to_access
from reservations.nodes.table.records import ended_workload_from_item


class NodeReads:
    """A node, its units' ids and its workloads, read strongly consistent."""

    def node(self, node_id: str) -> Node | None:
        """The node item: one GetItem."""
        item = get_item(node_key(node_id))
        return node_from_item(item) if item else None

    def unit_ids(self, node_id: str) -> list[str]:
        """The ids of the node's unit items (for a node item that does not name them)."""
        query: dict[str, Any] = {
            "TableName": table(),
            "KeyConditionExpression": "PK = :pk AND begins_with(SK, :unit)",
            "ExpressionAttributeValues": to_attributes(
                {":pk": node_pk(node_id), ":unit": UNIT_PREFIX}
            ),
            "ProjectionExpression": "SK",
            "ConsistentRead": True,
        }
        return [item["SK"].removeprefix(UNIT_PREFIX) for item in query_items(query)]

    def workload(self, node_id: str, workload_id: str) -> tuple[Node | None, Workload | None]:
        """The node item (for its owner) and the workload: one BatchGetItem."""
        keys = [node_key(node_id), workload_key(node_id, workload_id)]
        items = batch_get(keys)
        node = next((node_from_item(i) for i in items if i["SK"] == NODE_SK), None)
        workload = next((workload_from_item(i) for i in items if i["SK"] != NODE_SK), None)
        return node, workload

    def ended_workload(self, node_id: str, workload_id: str) -> EndedWorkload | None:
        """The latest life of the workload id in the node's history (one Query backwards
        over its id's keys, Limit 1: one item read whatever the history's size), strongly
        consistent, so an end's answer is followed by its history; None: none kept."""
        query: dict[str, Any] = {
            "TableName": table(),
            "KeyConditionExpression": "PK = :pk AND begins_with(SK, :workload)",
            "ExpressionAttributeValues": to_attributes(
                {
                    ":pk": workload_history_pk(node_id),
                    ":workload": workload_history_prefix(workload_id),
                }
            ),
            "ScanIndexForward": False,
            "Limit": 1,
            "ConsistentRead": True,
        }
        items = clients.dynamodb().query(**query)["Items"]
        return ended_workload_from_item(from_attributes(items[0])) if items else None

    def workloads(self, node_id: str) -> WorkloadsRead:
        """One Query: the node's live workloads up to its list access item, which sorts
        after them (at most 64 small items: never near the Query's 1 MB)."""
        items = list(query_items(up_to_access(node_id, WORKLOAD_PREFIX)))
        access = next((access_from_item(i) for i in items if i["SK"] == ACCESS_SK), None)
        return WorkloadsRead(
            access=access,
            workloads=tuple(
                workload_from_item(i) for i in items if i["SK"].startswith(WORKLOAD_PREFIX)
            ),
        )
