"""The local stack's consumers find nodes in the table: one loaded from the fleet at start,
and one registered later through PUT /v1/nodes/{nodeId} within a tick of the watch."""

from __future__ import annotations

import threading
import time
from typing import Any

import boto3
import pytest

from devstack import fleet_documents as f
from devstack.api_events import node_event
from devstack.consumers import Consumers, registered_nodes
from devstack.fleets import NODE_QUEUE_PREFIX, TABLE
from devstack.functions import invoke, load_function
from reservations.kernel.aws import clients
from reservations_tools.fleet.loader import local_dead_letter_arn

pytestmark = pytest.mark.moto

OPERATOR = {
    "key": "vl_local_test_node_operator",
    "orgId": "org-platform",
    "permissions": ["node.write"],
}


class RecordingConsumer:
    """Stands in for the agent's Consumer: runs until stopped, and says it ran."""

    def __init__(self, node_id: str, ran: list[str]) -> None:
        self.node_id = node_id
        self.ran = ran
        self.stopping = threading.Event()

    def run(self) -> None:
        self.ran.append(self.node_id)
        self.stopping.wait()

    def stop(self) -> None:
        self.stopping.set()


@pytest.fixture
def node_env(aws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NODE_QUEUE_PREFIX", NODE_QUEUE_PREFIX)
    monkeypatch.setenv("NODE_DEAD_LETTER_QUEUE_ARN", local_dead_letter_arn(boto3.client("sqs")))
    clients.reset()


def test_a_node_registered_through_the_api_gets_a_consumer_within_a_tick(aws, load_fleet, node_env):
    load_fleet(f.fleet([f.node("node-a", [f.unit("0000:04:00.0")])], [OPERATOR]))
    ran: list[str] = []
    consumers = Consumers(lambda node_id: RecordingConsumer(node_id, ran))  # type: ignore[arg-type,return-value]
    watcher = threading.Thread(
        target=consumers.watch, args=(lambda: registered_nodes(aws, TABLE), 0.05), daemon=True
    )
    watcher.start()
    try:
        _wait_for(lambda: ran == ["node-a"])
        body = {"ownerOrgId": "org-acme", "topologyGen": 1, "units": [f.unit("0000:05:00.0")]}
        put = invoke(
            load_function("put_node"),
            node_event("node-new", body, "Bearer vl_local_test_node_operator"),
        )
        assert put.status == 201
        _wait_for(lambda: sorted(ran) == ["node-a", "node-new"])
        time.sleep(0.2)  # further looks start nothing twice
        assert sorted(ran) == ["node-a", "node-new"]
    finally:
        consumers.stop()
        watcher.join(timeout=5)
    consumers.join()


def test_a_node_without_a_queue_gets_no_consumer_yet(aws, load_fleet):
    load_fleet(f.fleet([f.node("node-a", [f.unit("0000:04:00.0")])]))
    aws.update_item(
        TableName=TABLE,
        Key={"PK": {"S": "NODE#node-a"}, "SK": {"S": "#NODE"}},
        UpdateExpression="REMOVE queueUrl",
    )
    assert registered_nodes(aws, TABLE) == set()


def _wait_for(condition: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not within the time a local stack allows"
        time.sleep(0.02)
