"""Nodes through `make run`: a node registered through the local API gets its queue and,
within seconds, a consumer that takes its messages; a topology change puts a reservation
under review and the operator re-affirms it."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests

from devstack import fleet_documents as f
from reservations.nodes.models.partition import WorkloadKind
from reservations.terminations.models import SpotTermination
from tests.support.stack import (
    NODE,
    OPERATOR,
    RESERVATION,
    Stack,
    created,
    patient,
    post_keyed,
    run_stack,
)
from tests.support.stack import stack_fleet as base_fleet

pytestmark = pytest.mark.e2e
NODE_OPERATOR = "Bearer vl_local_test_node_operator"
NEW_NODE = "node-e2e-new"
CONSUMED_WITHIN = 30  # seconds: the watch looks every 2 s; this is the test's patience


@pytest.fixture(scope="module")
def node_stack(docker_ready: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    fleet = base_fleet()
    fleet["apiKeys"].append(
        {
            "key": "vl_local_test_node_operator",
            "orgId": "org-platform",
            "permissions": ["node.write"],
        }
    )
    fleet["nodes"].append(_booked_by_the_hour())
    yield from run_stack(tmp_path_factory.mktemp("nodes"), fleet, consumers=True)


MANY = "node-e2e-hourly"
HOURLY = 2_500


def _booked_by_the_hour() -> dict[str, Any]:
    """A node with units 04 and 05, 04 booked by the hour: 2,500 pending reservations."""
    start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(hours=2)
    booked = [
        f.reservation(f"res-hour-{n:04}", ["0000:04:00.0"], status="pending",
                      startsAt=f.iso(start + timedelta(hours=n)),
                      endsAt=f.iso(start + timedelta(hours=n + 1)))
        for n in range(HOURLY)
    ]  # fmt: skip
    return f.node(MANY, [f.unit("0000:04:00.0"), f.unit("0000:05:00.0")], booked)


def put_node(stack: Stack, node_id: str, body: dict[str, Any]) -> requests.Response:
    """A registration or an update, sent again once after a 503 (PUT is idempotent: a
    repeat after a committed first try answers 200)."""
    return patient.put(
        f"{stack.api}/v1/nodes/{node_id}",
        headers={"Authorization": NODE_OPERATOR, "Content-Type": "application/json"},
        data=json.dumps(body),
    )


def test_a_node_registered_through_the_api_gets_a_consumer(node_stack: Stack) -> None:
    body = {"ownerOrgId": "org-acme", "topologyGen": 1, "units": [f.unit("0000:31:00.0")]}
    response = put_node(node_stack, NEW_NODE, body)
    assert created(response), response.text
    assert response.json()["unitIds"] == ["0000:31:00.0"]
    listed = node_stack.get_units(NEW_NODE, OPERATOR)
    assert listed.status_code == 200, listed.text
    assert [u["id"] for u in listed.json()] == ["0000:31:00.0"]
    # A message on its queue is taken by the consumer `make run` starts for it.
    sqs = node_stack.aws("sqs")
    queue = sqs.get_queue_url(QueueName=f"reservations-node-{NEW_NODE}.fifo")["QueueUrl"]
    message = SpotTermination(
        termination_id="t-e2e-new-node", node_id=NEW_NODE, workload_id="vm-none",
        workload_kind=WorkloadKind.VM, unit_ids=["0000:31:00.0"], reservation_id="res-none",
        requested_at=datetime.now(UTC),
    )  # fmt: skip
    sqs.send_message(
        QueueUrl=queue,
        MessageBody=message.to_json(),
        MessageGroupId="vm-none",
        MessageDeduplicationId="t-e2e-new-node",
    )
    started = time.monotonic()
    while _waiting(sqs, queue):
        assert time.monotonic() - started < CONSUMED_WITHIN, "no consumer took the message"
        time.sleep(0.5)


def test_a_topology_change_puts_the_reservation_under_review_until_reaffirmed(
    node_stack: Stack,
) -> None:
    node = base_fleet()["nodes"][0]
    units = [u if u["id"] != "0000:07:00.0" else {**u, "gpuModelId": "nvidia-a100-80gb"}
             for u in node["units"]]  # fmt: skip
    response = put_node(node_stack, NODE, {"ownerOrgId": "org-acme",
                                                           "topologyGen": 2, "units": units})  # fmt: skip
    assert response.status_code == 200, response.text
    listed = node_stack.get_units(NODE, OPERATOR)
    assert listed.status_code == 200, listed.text
    governed = {u["id"]: u for u in listed.json()}
    assert governed["0000:04:00.0"]["released"] is False  # under review: withheld
    reaffirmed = post_keyed(
        f"{node_stack.api}/v1/nodes/{NODE}/reservations/{RESERVATION}/reaffirm",
        {"Authorization": NODE_OPERATOR},
        {"reason": "the A100 is what the lab asked for"},
        "e2e-reaffirm",
    )
    assert reaffirmed.status_code == 200, reaffirmed.text
    answer = reaffirmed.json()
    assert (answer["status"], answer["topologyGen"], answer["releasedUnitIds"]) == (
        "active", 2, [],
    )  # fmt: skip


def test_a_node_of_64_units_registers_in_one_write_and_changes_in_one(node_stack: Stack) -> None:
    """Through the Lambda containers and the emulator: a 201 (a 503 is tried again once, as
    a client does; a write that never fits its time fails), then an update of
    every unit, then the same generation again, which changes nothing."""
    ids = [f"0000:{0x40 + i // 32:02x}:{i % 32:02x}.0" for i in range(64)]
    registered = {"ownerOrgId": "org-acme", "topologyGen": 1, "units": [f.unit(u) for u in ids]}
    response = put_node(node_stack, "node-e2e-64", registered)
    assert created(response), response.text
    assert response.json()["unitIds"] == ids
    updated = {**registered, "topologyGen": 2,
               "units": [f.unit(u, gpuModelId="nvidia-b200") for u in ids]}  # fmt: skip
    assert put_node(node_stack, "node-e2e-64", updated).status_code == 200
    again = put_node(node_stack, "node-e2e-64", updated)
    assert (again.status_code, again.json()["topologyGen"]) == (200, 2)
    listed = node_stack.get_units("node-e2e-64", OPERATOR).json()
    assert {u["gpuModelId"] for u in listed} == {"nvidia-b200"}


def _waiting(sqs: Any, queue: str) -> bool:
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return any(int(value) for value in attributes.values())


def test_a_change_of_a_unit_booked_2500_times_is_a_200_and_it_changes_again(
    node_stack: Stack,
) -> None:
    """Every one of the 2,500 goes to review in the one write, and the unit is not stuck."""
    for gen, model in ((2, "nvidia-b200"), (3, "nvidia-h200")):
        units = [f.unit("0000:04:00.0", gpuModelId=model), f.unit("0000:05:00.0")]
        response = put_node(node_stack, MANY, {"ownerOrgId": "org-acme", "topologyGen": gen,
                                               "units": units})  # fmt: skip
        assert response.status_code == 200, response.text
        assert response.json()["topologyGen"] == gen
    listed = node_stack.get_units(MANY, OPERATOR).json()
    assert {u["id"]: u["gpuModelId"] for u in listed}["0000:04:00.0"] == "nvidia-h200"
