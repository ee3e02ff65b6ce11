"""The node reads of the DAL called directly over moto: a node item that does not name its
units has them read from its unit items (one strongly consistent Query of their keys only),
and one workload read with its node, either of them missing."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from reservations.kernel.aws import clients
from reservations.kernel.aws import queries as dal_queries
from reservations.kernel.aws.codec import to_attributes
from reservations.nodes.models.partition import Node, Unit
from reservations.nodes.table.items import node_item, reservation_item, unit_item, workload_item
from reservations.nodes.table.reads import NodeReads
from tests.support.use_cases import reservation, workload

pytestmark = [pytest.mark.moto, pytest.mark.disable_socket]

TABLE = "ReservationsTable"
UNITS = ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0"]


def put(aws: Any, item: dict[str, Any]) -> None:
    aws.put_item(TableName=TABLE, Item=to_attributes(item))


def unit(unit_id: str) -> Unit:
    return Unit(unit_id, "vfio-group", "h100", 1, True)


@pytest.fixture
def nodes(aws: Any) -> Any:
    """node-a with its node item (naming no units), three units, a workload and a
    reservation; node-ab next to it with a unit of its own."""
    put(aws, node_item(Node("node-a", "org-acme", topology_gen=2)))
    for unit_id in reversed(UNITS):
        put(aws, unit_item("node-a", unit(unit_id)))
    put(aws, workload_item("node-a", workload("vm-1", (UNITS[0],))))
    put(aws, reservation_item(reservation(node_id="node-a")))
    put(aws, unit_item("node-ab", unit("0000:0f:00.0")))
    return aws


class _Recording:
    """The client, with every Query's parameters kept."""

    def __init__(self, client: Any, queries: list[dict[str, Any]]) -> None:
        self.client, self.queries = client, queries

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    def query(self, **params: Any) -> Any:
        self.queries.append(params)
        return self.client.query(**params)


def test_a_nodes_unit_ids_are_its_unit_items_ids_read_consistently_keys_only(
    nodes: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    queries: list[dict[str, Any]] = []
    client = clients.dynamodb()
    recording = SimpleNamespace(dynamodb=lambda: _Recording(client, queries))
    monkeypatch.setattr(dal_queries, "clients", recording)
    assert NodeReads().unit_ids("node-a") == UNITS
    assert [(q["ConsistentRead"], q["ProjectionExpression"]) for q in queries] == [(True, "SK")]


def test_a_node_without_unit_items_has_no_unit_ids(nodes: Any) -> None:
    assert NodeReads().unit_ids("node-b") == []


def test_one_workload_is_read_with_its_node(nodes: Any) -> None:
    node, found = NodeReads().workload("node-a", "vm-1")
    assert node is not None
    assert (node.id, node.owner_org_id) == ("node-a", "org-acme")
    assert found is not None
    assert (found.id, found.unit_ids) == ("vm-1", (UNITS[0],))


@pytest.mark.parametrize(
    ("node_id", "workload_id", "node_found"),
    [("node-a", "vm-2", True), ("node-b", "vm-1", False)],
)
def test_a_missing_node_or_workload_is_none(
    nodes: Any, node_id: str, workload_id: str, node_found: bool
) -> None:
    node, found = NodeReads().workload(node_id, workload_id)
    assert (node is not None, found) == (node_found, None)


def test_the_workloads_of_a_node_without_a_list_access_item_read_with_no_access(
    nodes: Any,
) -> None:
    read = NodeReads().workloads("node-a")
    assert read.access is None
    assert [w.id for w in read.workloads] == ["vm-1"]
