"""POST /v1/nodes/{nodeId}/workloads with ``reservationId``, in-process over moto: a
take-back's 201 and 202 as stored and answered, the spot workload's message on the node's
queue, list units' ``heldFor``, the node's report through the real reports function handing
the unit over (``workload.started``), a kept refusal, and the requests each call makes."""

from __future__ import annotations

import copy
import json
from types import ModuleType
from typing import Any

import boto3
import pytest

from devstack import fleet_documents as f
from devstack.api_events import end_event, event_file, list_units_event, place_event
from devstack.functions import FakeContext, invoke, load_function
from tests.support import state

pytestmark = pytest.mark.moto

SCHEDULER = "Bearer vl_local_test_scheduler"
FREE, LENT, SPOT = "0000:04:00.0", "0000:05:00.0", "0000:06:00.0"
KEYS = [
    {"key": "vl_local_test_scheduler", "orgId": "org-platform", "permissions": ["workload.place"]},
]


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    names = ("place_workload", "end_workload", "list_units", "termination_reports")
    return {name: load_function(name) for name in names}


@pytest.fixture
def fleet(load_fleet):
    units = [f.unit(u) for u in (FREE, LENT, SPOT)]
    reservations = [f.reservation("res-1", [FREE, LENT, SPOT], releasedUnitIds=[LENT, SPOT])]
    workloads = [f.workload("vm-spot", [SPOT])]
    load_fleet(f.fleet([f.node("node-a", units, reservations, workloads)], extra_keys=KEYS))


@pytest.fixture
def sqs(aws):
    return boto3.client("sqs")


def body(**fields: Any) -> dict[str, Any]:
    return {
        "id": "vm-lab",
        "kind": "vm",
        "tier": "reserved",
        "orgId": "org-lab",
        "reservationId": "res-1",
    } | fields


def place(functions, document, idempotency_key=None):
    return invoke(
        functions["place_workload"], place_event("node-a", document, SCHEDULER, idempotency_key)
    )


def report(functions, termination_id: str, workload_id: str) -> dict[str, Any]:
    event = copy.deepcopy(event_file("termination_reports/terminated.json"))
    message = json.loads(event["Records"][0]["body"])
    message |= {"terminationId": termination_id, "nodeId": "node-a", "workloadId": workload_id}
    event["Records"][0]["body"] = json.dumps(message)
    return functions["termination_reports"].lambda_handler(event, FakeContext())


def node_events(aws: Any, event_type: str) -> list[dict[str, Any]]:
    return [e for e in state.events(aws, "node-a") if e["type"] == event_type]


def test_free_and_lent_units_are_claimed_at_once_201(functions, fleet, aws):
    result = place(functions, body(count=2))
    assert result.status == 201, result.body
    assert (result.body["state"], result.body["unitIds"]) == ("running", [FREE, LENT])
    for unit_id in (FREE, LENT):
        assert state.unit(aws, "node-a", unit_id)["claimedBy"] == "vm:vm-lab"
    assert state.reservation(aws, "node-a", "res-1")["releasedUnitIds"] == [SPOT]
    [reclaimed] = node_events(aws, "reservation.reclaimed")
    assert (reclaimed["data"]["cause"], reclaimed["data"]["unitIds"]) == ("placement", [LENT])


def test_a_unit_under_spot_work_is_held_202_and_the_report_hands_it_over(
    functions, fleet, aws, sqs
):
    result = place(functions, body(unitIds=[SPOT]))
    assert result.status == 202, result.body
    [waited] = result.body["waitingFor"]
    assert result.body["state"] == "waiting"
    assert waited["workloadId"] == "vm-spot"
    spot = state.workload(aws, "node-a", "vm-spot")
    assert (spot["state"], spot["terminationId"]) == ("terminating", waited["terminationId"])
    assert waited["terminateAt"] == spot["terminateAt"].replace(".000Z", "Z")
    [message] = state.drain(sqs, state.node_queue_url(aws, "node-a"))
    assert (message["workloadId"], message["terminationId"]) == ("vm-spot", spot["terminationId"])
    unit = state.unit(aws, "node-a", SPOT)
    assert (unit["claimedBy"], unit["heldFor"]) == ("vm:vm-spot", "vm:vm-lab")
    listed = invoke(
        functions["list_units"], list_units_event("node-a", "Bearer vl_local_test_owner")
    )
    [shown] = [u for u in listed.body if u["id"] == SPOT]
    assert (shown["claimedBy"], shown["heldFor"]) == ("vm:vm-spot", "vm:vm-lab")

    assert report(functions, spot["terminationId"], "vm-spot") == {"batchItemFailures": []}
    unit = state.unit(aws, "node-a", SPOT)
    assert (unit["claimedBy"], unit.get("heldFor")) == ("vm:vm-lab", None)
    started = state.workload(aws, "node-a", "vm-lab")
    assert (started["state"], started.get("waitingFor")) == ("running", None)
    [event] = node_events(aws, "workload.started")
    assert event["subject"] == "workloads/vm-lab"


def test_not_enough_units_is_kept_by_its_key(functions, fleet, aws):
    first = place(functions, body(count=4), idempotency_key="k-4")
    assert (first.status, first.body["code"]) == (409, "not_enough_units")
    again = place(functions, body(count=4), idempotency_key="k-4")
    assert (again.status, again.body) == (first.status, first.body)


def test_a_take_back_is_one_query_and_one_transaction_then_one_send(
    functions, fleet, sent_requests
):
    place(functions, body(id="vm-warm", unitIds=[FREE]))  # the key cached
    sent_requests.clear()
    assert place(functions, body(unitIds=[LENT])).status == 201
    assert sent_requests.sent == [("dynamodb", "Query"), ("dynamodb", "TransactWriteItems")]
    sent_requests.clear()
    assert place(functions, body(id="vm-wait", unitIds=[SPOT])).status == 202
    assert sent_requests.sent == [
        ("dynamodb", "Query"),
        ("dynamodb", "TransactWriteItems"),
        ("sqs", "SendMessageBatch"),
    ]


def test_a_report_trims_what_it_waits_on_and_ending_the_waiting_workload_drops_its_hold(
    functions, load_fleet, aws
):
    one, two = "0000:07:00.0", "0000:08:00.0"
    units = [f.unit(u) for u in (one, two)]
    reservations = [f.reservation("res-1", [one, two], releasedUnitIds=[one, two])]
    workloads = [f.workload("vm-a", [one]), f.workload("vm-b", [two])]
    load_fleet(f.fleet([f.node("node-a", units, reservations, workloads)], extra_keys=KEYS))
    placed = place(functions, body(unitIds=[one, two]))
    assert placed.status == 202, placed.body
    terminations = {w["workloadId"]: w["terminationId"] for w in placed.body["waitingFor"]}
    assert report(functions, terminations["vm-a"], "vm-a") == {"batchItemFailures": []}
    waiting = state.workload(aws, "node-a", "vm-lab")
    assert waiting["state"] == "waiting"
    assert [w["workloadId"] for w in waiting["waitingFor"]] == ["vm-b"]
    assert state.unit(aws, "node-a", one)["claimedBy"] == "vm:vm-lab"
    ended = invoke(functions["end_workload"], end_event("node-a", "vm-lab", SCHEDULER, None))
    assert ended.status == 204, ended.body
    held = state.unit(aws, "node-a", two)
    assert (held["claimedBy"], held.get("heldFor")) == ("vm:vm-b", None)
    assert state.unit(aws, "node-a", one).get("claimedBy") is None
    assert node_events(aws, "workload.started") == []
