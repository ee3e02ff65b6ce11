"""A node update that puts a reservation under review, interleaved with the calls that decide
from that reservation's effective status: the update writes no reservation (the review is
derived from the node's generations), so each of those calls conditions on the node's
topology as it read it. A hook between a call's read and its write commits the other call
there, deterministically; every outcome is one of the two serial orders."""

from __future__ import annotations

import json
from collections.abc import Callable
from types import ModuleType
from typing import Any

import boto3
import pytest

from devstack import fleet_documents as f
from devstack.api_events import (
    cancel_event,
    create_event,
    get_event,
    node_event,
    place_event,
    reclaim_event,
    release_event,
)
from devstack.fleets import NODE_QUEUE_PREFIX
from devstack.functions import invoke, load_function
from reservations.kernel.aws import clients
from reservations.kernel.bodies import RawBody
from reservations.kernel.caller import Caller
from reservations_tools.fleet.loader import local_dead_letter_arn
from tests.support import state
from tests.support.faults import on_call
from tests.support.ports import real_ports
from tests.support.writes import put_node, release

pytestmark = pytest.mark.moto

U4, U5, U6, U7 = "0000:04:00.0", "0000:05:00.0", "0000:06:00.0", "0000:07:00.0"
BROKER, OPERATOR = "Bearer vl_local_test_broker", "Bearer vl_local_test_operator"
WRITER = {"key": "vl_local_test_writer", "orgId": "org-acme",
          "permissions": ["reservation.read", "reservation.write"]}  # fmt: skip
PLACER = {"key": "vl_local_test_placer", "orgId": "org-platform", "permissions": ["workload.place"]}
NODE_OPERATOR = {
    "key": "vl_local_test_node_op",
    "orgId": "org-platform",
    "permissions": ["node.write"],
}
# The other writer, run through its use case in the hook (a handler keeps its request in
# module state, so one invocation must not run inside another).
NODE_CALLER = Caller("key-node-op", "org-platform", frozenset({"node.write"}), True)
BROKER_CALLER = Caller("key-broker", "org-broker", frozenset({"reservation.capacity"}))
# 07 on a new model: res-1 (04, 05 and 07; 05 lent to spot, running vm-a) is under review.
# No call below names 07: only the node's topology tells them.
REVIEWING = {"ownerOrgId": "org-acme", "topologyGen": 2,
             "units": [f.unit(U4), f.unit(U5), f.unit(U6), f.unit(U7, gpuModelId="nvidia-a100")]}  # fmt: skip


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    names = ("release", "reclaim", "cancel", "place_workload", "create_reservation",
             "get_reservation", "put_node")  # fmt: skip
    return {name: load_function(name) for name in names}


@pytest.fixture
def node(load_fleet: Any, aws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NODE_QUEUE_PREFIX", NODE_QUEUE_PREFIX)
    monkeypatch.setenv("NODE_DEAD_LETTER_QUEUE_ARN", local_dead_letter_arn(boto3.client("sqs")))
    clients.reset()
    reservations = [f.reservation("res-1", [U4, U5, U7], releasedUnitIds=[U5])]
    workloads = [f.workload("vm-a", [U5])]
    units = [f.unit(U4), f.unit(U5), f.unit(U6), f.unit(U7)]
    node = f.node("node-a", units, reservations, workloads)
    load_fleet(f.fleet([node], [WRITER, PLACER, NODE_OPERATOR]))


def the_update_commits_first(after: Callable[[], None] | None = None) -> Any:
    """A hook for the first write: the update commits before it (once)."""
    done: list[bool] = []

    def hook(_params: dict[str, Any]) -> None:
        if done:
            return
        done.append(True)
        body = RawBody(json.dumps(REVIEWING))
        ports = real_ports(make_queue=lambda _n: "unused")
        assert put_node(NODE_CALLER, "node-a", body, ports).status == 200
        if after is not None:
            after()

    return on_call(clients.dynamodb(), "TransactWriteItems", before=hook)


def status(functions: dict[str, ModuleType], reservation_id: str = "res-1") -> str:
    answer = invoke(functions["get_reservation"], get_event("node-a", reservation_id, OPERATOR))
    return str(answer.body["status"])


def test_a_release_after_the_update_read_its_reservation_is_refused_as_under_review(
    functions, node, aws
):
    before = state.reservation(aws, "node-a", "res-1")
    with the_update_commits_first():
        answer = invoke(functions["release"], release_event("node-a", "res-1",
                                                            {"unitIds": [U4]}, BROKER))  # fmt: skip
    assert (answer.status, answer.body["code"]) == (409, "reservation_not_active")
    assert "needs-review" in answer.body["error"]
    assert state.reservation(aws, "node-a", "res-1") == before  # nothing lent
    assert state.reservation_events(aws, "node-a", "res-1") == []
    assert status(functions) == "needs-review"


def test_a_reclaim_after_the_update_read_its_reservation_terminates_nothing(functions, node, aws):
    queue = state.node_queue_url(aws, "node-a")
    with the_update_commits_first():
        answer = invoke(functions["reclaim"], reclaim_event("node-a", "res-1",
                                                            {"unitIds": [U5]}, BROKER))  # fmt: skip
    assert (answer.status, answer.body["code"]) == (409, "reservation_not_active")
    assert state.workload(aws, "node-a", "vm-a")["state"] == "running"
    assert state.reservation(aws, "node-a", "res-1")["releasedUnitIds"] == [U5]
    assert state.drain(boto3.client("sqs"), queue) == []


def test_a_placement_after_the_update_read_finds_the_unit_withheld(functions, node, aws):
    body = {"id": "vm-lab", "kind": "vm", "tier": "reserved", "orgId": "org-lab",
            "unitIds": [U4]}  # fmt: skip
    with the_update_commits_first():
        answer = invoke(functions["place_workload"],
                        place_event("node-a", body, "Bearer vl_local_test_placer"))  # fmt: skip
    assert (answer.status, answer.body["code"]) == (409, "units_unavailable")
    assert "under review" in answer.body["details"][0]["problem"]
    assert "claimedBy" not in state.unit(aws, "node-a", U4)
    assert state.item(aws, "node-a", "WL#vm-lab") is None


def test_a_cancel_after_the_update_read_records_the_review_it_ended(functions, node, aws):
    with the_update_commits_first():
        answer = invoke(
            functions["cancel"],
            cancel_event("node-a", "res-1", None, "Bearer vl_local_test_writer"),
        )
    assert (answer.status, answer.body["status"]) == (200, "cancelled")
    [event] = state.reservation_events(aws, "node-a", "res-1")
    assert (event["type"], event["data"]["previousStatus"]) == (
        "reservation.cancelled",
        "needs-review",
    )


def test_a_create_after_the_update_read_decides_on_the_new_topology(functions, node, aws):
    body = {"unitIds": [U6], "allowedOrgIds": ["org-lab"]}
    removing = {**REVIEWING, "units": [f.unit(U4), f.unit(U5), f.unit(U7)]}  # 06 goes
    done: list[bool] = []

    def update_removes_06(_params: dict[str, Any]) -> None:
        if not done:
            done.append(True)
            ports = real_ports(make_queue=lambda _n: "unused")
            put_node(NODE_CALLER, "node-a", RawBody(json.dumps(removing)), ports)

    with on_call(clients.dynamodb(), "TransactWriteItems", before=update_removes_06):
        answer = invoke(functions["create_reservation"],
                        create_event("node-a", body, "Bearer vl_local_test_writer"))  # fmt: skip
    assert (answer.status, answer.body["code"]) == (422, "units_not_reservable")
    assert "not on this node" in answer.body["details"][0]["problem"]


def test_a_release_committed_after_the_update_read_is_reviewed_with_the_rest(functions, node, aws):
    """The other order: the update reads, the release commits, the update commits (it
    writes no reservation, so nothing of the release is lost)."""
    done: list[bool] = []

    def the_release_commits_first(_params: dict[str, Any]) -> None:
        if not done:
            done.append(True)
            body = RawBody(json.dumps({"unitIds": [U4]}))
            ports = real_ports()
            assert release(BROKER_CALLER, "node-a", "res-1", body, None, ports).status == 200

    with on_call(clients.dynamodb(), "TransactWriteItems", before=the_release_commits_first):
        answer = invoke(functions["put_node"],
                        node_event("node-a", REVIEWING, "Bearer vl_local_test_node_op"))  # fmt: skip
    assert answer.status == 200
    assert state.reservation(aws, "node-a", "res-1")["releasedUnitIds"] == [U4, U5]
    assert status(functions) == "needs-review"
