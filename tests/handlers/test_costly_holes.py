"""Three behaviours whose loss would cost real money, each pinned against its own bug.

- A spot workload spanning units of two reservations, reclaimed through both from stale
  reads, gets one termination and one message (the workload's version is checked).
- Reclaim answers 401 before any 404, however malformed the path.
- A late report never frees a unit another workload holds by now.
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import boto3
import pytest

from devstack.sqs_events import sqs_event
from reservations.dal import clients
from tests.support import fleets as f
from tests.support import state
from tests.support.faults import on_call
from tests.support.lambdas import FakeContext, invoke, load_function, reclaim_event

BROKER = "Bearer vl_test_broker"
U1, U2 = "0000:04:00.0", "0000:05:00.0"


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    return {name: load_function(name) for name in ("reclaim", "termination_reports")}


def test_a_spanning_workload_reclaimed_through_two_reservations_at_once_is_terminated_once(
    functions, load_fleet, aws, monkeypatch
):
    load_fleet(
        f.fleet(
            [
                f.node(
                    "node-a",
                    [f.unit(U1), f.unit(U2)],
                    [
                        f.reservation("res-1", [U1], releasedUnitIds=[U1]),
                        f.reservation("res-2", [U2], releasedUnitIds=[U2]),
                    ],
                    [f.workload("vm-span", [U1, U2])],
                )
            ]
        )
    )
    inner: list[Any] = []

    def the_other_reclaim_runs_after_the_read(_response: Any) -> None:
        if not inner:  # res-2's reclaim commits between res-1's read and write
            inner.append(None)
            event = reclaim_event("node-a", "res-2", {"unitIds": [U2]}, BROKER)
            inner[0] = invoke(functions["reclaim"], event)

    with on_call(clients.dynamodb(), "Query", after=the_other_reclaim_runs_after_the_read):
        outer = invoke(
            functions["reclaim"], reclaim_event("node-a", "res-1", {"unitIds": [U1]}, BROKER)
        )

    assert inner[0].status == outer.status == 200
    assert inner[0].body["terminated"] == outer.body["terminated"] == ["vm-span"]
    messages = state.drain(boto3.client("sqs"), state.node_queue_url(aws, "node-a"))
    assert [m["workloadId"] for m in messages] == ["vm-span"]
    workload = state.workload(aws, "node-a", "vm-span")
    assert messages[0]["terminationId"] == workload["terminationId"]


@pytest.mark.parametrize("authorization", [None, "Bearer vl_test_unknown_key"])
@pytest.mark.parametrize(
    ("node", "reservation"),
    [
        ("bad id!", "res-1"),
        ("node-a", "-starts-badly"),
        ("n" * 129, "res-1"),
        ("node-a", "r" * 200),
    ],
)
def test_reclaim_answers_401_before_any_404_for_a_malformed_path(
    functions, load_fleet, node, reservation, authorization
):
    load_fleet(f.fleet([f.node("node-a", [f.unit(U1)], [f.reservation("res-1", [U1])])]))
    event = reclaim_event(node, reservation, {"unitIds": [U1]}, authorization)
    result = invoke(functions["reclaim"], event)
    assert (result.status, result.body["code"]) == (401, "unauthorized")
    assert result.headers["www-authenticate"] == "Bearer"


def _report_event(termination_id: str, workload_id: str) -> dict[str, Any]:
    report = {
        "version": 1,
        "type": "termination-report",
        "terminationId": termination_id,
        "nodeId": "node-a",
        "workloadId": workload_id,
        "outcome": "terminated",
        "reportedAt": "2026-11-30T00:00:00Z",
    }
    message = {"MessageId": "m-1", "ReceiptHandle": "r-1", "Body": json.dumps(report)}
    return sqs_event([message], "arn:aws:sqs:us-east-1:123456789012:reports")


def test_a_late_report_leaves_a_unit_another_workload_holds_by_now(functions, load_fleet, aws):
    load_fleet(
        f.fleet(
            [
                f.node(
                    "node-a",
                    [f.unit(U1), f.unit(U2)],
                    [f.reservation("res-1", [U1, U2], releasedUnitIds=[U1, U2])],
                    [f.workload("vm-old", [U1, U2], state="terminating", terminationId="t-old")],
                )
            ]
        )
    )
    # U1 has since moved to another workload (a record the scheduler made meanwhile).
    aws.update_item(
        TableName="ReservationsTable",
        Key={"PK": {"S": "NODE#node-a"}, "SK": {"S": f"UNIT#{U1}"}},
        UpdateExpression="SET claimedBy = :other, version = version + :one",
        ExpressionAttributeValues={":other": {"S": "vm:vm-new"}, ":one": {"N": "1"}},
    )
    response = functions["termination_reports"].lambda_handler(
        _report_event("t-old", "vm-old"), FakeContext()
    )
    assert response["batchItemFailures"] == []
    assert state.item(aws, "node-a", "WL#vm-old") is None  # the termination is closed
    assert state.unit(aws, "node-a", U1)["claimedBy"] == "vm:vm-new"  # still the new one's
    assert "claimedBy" not in state.unit(aws, "node-a", U2)  # the old one's is freed
