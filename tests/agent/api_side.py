"""The API's half of a termination, in-process: the real reclaim, list-units and reports
functions over whatever AWS the test points them at (moto, or the emulator)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from devstack import fleet_documents as f
from devstack.api_events import list_units_event, reclaim_event
from devstack.functions import FakeContext, invoke, load_function
from devstack.sqs_events import failed_message_ids, sqs_event

BROKER = "Bearer vl_local_test_broker"
UNIT = "0000:04:00.0"
REPORTS_ARN = "arn:aws:sqs:us-east-1:123456789012:TerminationReportsQueue"


def functions() -> dict[str, ModuleType]:
    return {name: load_function(name) for name in ("reclaim", "list_units", "termination_reports")}


def fleet_with_a_spot_workload(node_id: str, workload_id: str, kind: str = "vm") -> dict[str, Any]:
    """``workload_id`` runs on unit 04, lent to the spot market by reservation res-1."""
    return f.fleet(
        [
            f.node(
                node_id,
                [f.unit(UNIT)],
                [f.reservation("res-1", [UNIT], releasedUnitIds=[UNIT])],
                [f.workload(workload_id, [UNIT], kind=kind)],
            )
        ]
    )


def reclaim(functions: dict[str, ModuleType], node_id: str, notice_seconds: int = 0) -> Any:
    """The broker takes unit 04 back: its workload is terminated, a message sent (with the
    notice, if one is given)."""
    body: dict[str, Any] = {"unitIds": [UNIT]}
    if notice_seconds:
        body["noticeSeconds"] = notice_seconds
    event = reclaim_event(node_id, "res-1", body, BROKER)
    result = invoke(functions["reclaim"], event)
    assert result.status == 200, result.body
    return result.body


def apply_reports(functions: dict[str, ModuleType], sqs: Any, reports_url: str) -> list[str]:
    """The reports on the queue, through the real reports function; their outcomes."""
    messages = sqs.receive_message(QueueUrl=reports_url, MaxNumberOfMessages=10)["Messages"]
    response = functions["termination_reports"].lambda_handler(
        sqs_event(messages, REPORTS_ARN), FakeContext()
    )
    assert failed_message_ids(response) == set()
    for message in messages:
        sqs.delete_message(QueueUrl=reports_url, ReceiptHandle=message["ReceiptHandle"])
    return [message["Body"] for message in messages]


def unit(functions: dict[str, ModuleType], node_id: str) -> dict[str, Any]:
    """Unit 04 as the API lists it."""
    listed = invoke(functions["list_units"], list_units_event(node_id, BROKER)).body
    return {u["id"]: u for u in listed}[UNIT]
