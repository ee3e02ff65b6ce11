"""Reclaim -> message -> node consumer -> report -> units free, with a crash at every step.

In-process over moto: the reclaim and reports functions are the real handlers, the
consumer is the reference agent, the sweeper is the real logic with short deadlines.
"""

from __future__ import annotations

import json
import threading
import time
from types import ModuleType
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from devstack import fleet_documents as f
from devstack.api_events import event_file, list_units_event, reclaim_event
from devstack.functions import FakeContext, invoke, load_function
from devstack.pump import warm_up_event
from devstack.sqs_events import failed_message_ids, sqs_event
from node_agent.consumer import Consumer, DoneLog
from node_agent.drivers import LogDriver, Result
from reservations.kernel.aws import clients
from reservations.kernel.settings import settings
from reservations.kernel.writes import WriteConflict
from tests.support import state
from tests.support.faults import on_call

pytestmark = pytest.mark.moto

BROKER = "Bearer vl_local_test_broker"


class Crash(BaseException):
    """The consumer process dies here."""


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    return {
        name: load_function(name)
        for name in ("reclaim", "list_units", "termination_reports", "sweeper")
    }


@pytest.fixture
def loop(aws, load_fleet, functions, monkeypatch):
    monkeypatch.setenv("SWEEPER_GRACE_SECONDS", "0")
    monkeypatch.setenv("TERMINATION_CONFIRM_DEADLINE_SECONDS", "0")
    monkeypatch.setenv("TERMINATION_MAX_DELIVERIES", "2")
    settings.cache_clear()
    load_fleet(
        f.fleet(
            [
                f.node(
                    "node-a",
                    [
                        f.unit(u)
                        for u in ("0000:04:00.0", "0000:05:00.0", "0000:06:00.0", "0000:07:00.0")
                    ],
                    [
                        f.reservation(
                            "res-1",
                            ["0000:04:00.0", "0000:05:00.0", "0000:07:00.0"],
                            releasedUnitIds=["0000:04:00.0", "0000:05:00.0", "0000:07:00.0"],
                        )
                    ],
                    [
                        f.workload("vm-1", ["0000:04:00.0"]),
                        f.workload("vm-span", ["0000:05:00.0", "0000:06:00.0"]),
                        f.workload("vm-keep", ["0000:07:00.0"], tier="on-demand"),
                    ],
                ),
                f.node(
                    "node-b", [f.unit("0000:04:00.0")], [], [f.workload("vm-b", ["0000:04:00.0"])]
                ),
            ]
        )
    )
    yield Loop(aws, boto3.client("sqs"), functions)
    settings.cache_clear()


class Loop:
    def __init__(self, dynamodb: Any, sqs: Any, functions: dict[str, ModuleType]) -> None:
        self.db = dynamodb
        self.sqs = sqs
        self.functions = functions
        self.queue = state.node_queue_url(dynamodb, "node-a")
        self.reports = sqs.get_queue_url(QueueName="TerminationReportsQueue")["QueueUrl"]
        self.reports_arn = "arn:aws:sqs:us-east-1:123456789012:TerminationReportsQueue"
        self.dead_letters = sqs.get_queue_url(QueueName="SpotTerminationDeadLetterQueue.fifo")[
            "QueueUrl"
        ]
        self.driver = LogDriver()  # the node's real state: outlives consumer processes

    def reclaim(self, units: list[str]) -> Any:
        result = invoke(
            self.functions["reclaim"], reclaim_event("node-a", "res-1", {"unitIds": units}, BROKER)
        )
        assert result.status == 200, result.body
        return result.body

    def consumer(self, checkpoint=lambda _s: None, driver=None, node_id="node-a") -> Consumer:
        return Consumer(
            self.sqs,
            node_id,
            self.queue,
            self.reports,
            driver or self.driver,
            DoneLog(),
            wait_seconds=0,
            visibility_timeout=0,
            checkpoint=checkpoint,
        )

    def drain_consumer(self, consumer: Consumer, rounds: int = 20) -> None:
        for _ in range(rounds):
            if not consumer.poll_once():
                return

    def apply_reports(self) -> list[str]:
        """One batch through the real reports function; returns the ids it asked to retry."""
        messages = self.sqs.receive_message(QueueUrl=self.reports, MaxNumberOfMessages=10).get(
            "Messages", []
        )
        if not messages:
            return []
        response = self.functions["termination_reports"].lambda_handler(
            sqs_event(messages, self.reports_arn), FakeContext()
        )
        failed = failed_message_ids(response)
        for message in messages:
            if message["MessageId"] not in failed:
                self.sqs.delete_message(
                    QueueUrl=self.reports, ReceiptHandle=message["ReceiptHandle"]
                )
            else:
                self.sqs.change_message_visibility(
                    QueueUrl=self.reports,
                    ReceiptHandle=message["ReceiptHandle"],
                    VisibilityTimeout=0,
                )
        return sorted(failed)

    def sweep(self) -> dict[str, int]:
        return self.functions["sweeper"].lambda_handler({}, FakeContext())

    def units(self) -> dict[str, dict[str, Any]]:
        listed = invoke(self.functions["list_units"], list_units_event("node-a", BROKER)).body
        return {u["id"]: u for u in listed}

    def dead_letter_count(self) -> int:
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=self.dead_letters, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"])


def assert_freed_only(loop: Loop, freed: list[str]) -> None:
    units = loop.units()
    for unit_id in freed:
        assert units[unit_id]["state"] == "free", unit_id
        assert "claimedBy" not in units[unit_id]
    assert units["0000:07:00.0"]["claimedBy"] == "vm:vm-keep"  # not spot: never touched
    assert state.item(loop.db, "node-b", "UNIT#0000:04:00.0")["claimedBy"] == "vm:vm-b"


def test_the_whole_loop_frees_the_units(loop):
    body = loop.reclaim(["0000:04:00.0", "0000:05:00.0", "0000:07:00.0"])
    assert body["terminated"] == ["vm-1", "vm-span"]
    assert loop.units()["0000:04:00.0"]["state"] == "claimed"
    loop.drain_consumer(loop.consumer())
    assert loop.apply_reports() == []
    # vm-span also held unnamed 06: it is freed too (the whole workload stopped).
    assert_freed_only(loop, ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0"])
    assert state.item(loop.db, "node-a", "WL#vm-1") is None  # history, not the hot partition
    history = loop.db.query(
        TableName="ReservationsTable",
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": "WLHIST#node-a"}},
    )["Items"]
    assert sorted(i["workloadId"]["S"] for i in history) == ["vm-1", "vm-span"]
    assert loop.sweep() == {}  # nothing left open


def test_crash_after_commit_before_send_is_delivered_by_the_sweeper(loop):
    def down(_params):
        raise ClientError({"Error": {"Code": "ServiceUnavailable", "Message": "x"}}, "Send")

    with on_call(clients.sqs(), "SendMessageBatch", before=down):
        loop.reclaim(["0000:04:00.0"])
    assert loop.consumer().poll_once() == 0  # nothing was queued
    assert loop.sweep() == {"redelivered": 1}
    loop.drain_consumer(loop.consumer())
    loop.apply_reports()
    assert_freed_only(loop, ["0000:04:00.0"])


@pytest.mark.parametrize("dies_at", ["stopped", "reported", "recorded"])
def test_a_consumer_that_dies_mid_message_ends_in_one_termination(loop, dies_at):
    loop.reclaim(["0000:04:00.0"])

    def die(step: str) -> None:
        if step == dies_at:
            raise Crash

    with pytest.raises(Crash):
        loop.consumer(checkpoint=die).poll_once()
    # A new process: the message comes back (visibility timeout), the VM is already gone.
    fresh = loop.consumer()
    loop.drain_consumer(fresh)
    assert fresh.counts["gone"] == 1
    assert fresh.counts["terminated"] == 0
    assert loop.apply_reports() == []
    loop.apply_reports()
    assert_freed_only(loop, ["0000:04:00.0"])
    assert loop.dead_letter_count() == 0


def test_duplicate_and_late_reports_change_nothing(loop):
    loop.reclaim(["0000:04:00.0"])
    loop.drain_consumer(loop.consumer())
    [report] = [
        json.loads(m["Body"])
        for m in loop.sqs.receive_message(QueueUrl=loop.reports).get("Messages", [])
    ]
    for message in (report, report):
        loop.sqs.send_message(QueueUrl=loop.reports, MessageBody=json.dumps(message))
    for _ in range(3):
        assert loop.apply_reports() == []
    before = state.whole_table(loop.db)
    loop.sqs.send_message(QueueUrl=loop.reports, MessageBody=json.dumps(report))
    unknown = {**report, "terminationId": "never-existed", "workloadId": "vm-keep"}
    loop.sqs.send_message(QueueUrl=loop.reports, MessageBody=json.dumps(unknown))
    assert loop.apply_reports() == []  # logged and dropped, not retried forever
    assert state.whole_table(loop.db) == before


def test_reports_function_failing_mid_batch_retries_only_the_failed_records(loop, monkeypatch):
    loop.reclaim(["0000:04:00.0", "0000:05:00.0"])
    loop.drain_consumer(loop.consumer())
    from reservations.terminations import reports as termination_reports

    real_close = termination_reports.close_termination

    # Fail every attempt of the first delivery of vm-span's report.
    attempts = {"n": 0}

    def failing_first_delivery(report, now, store):
        if report.workload_id == "vm-span" and attempts["n"] < 3:
            attempts["n"] += 1
            raise WriteConflict("injected")
        return real_close(report, now, store)

    monkeypatch.setattr(termination_reports, "close_termination", failing_first_delivery)
    failed = loop.apply_reports()
    assert len(failed) == 1
    units = loop.units()
    assert units["0000:04:00.0"]["state"] == "free"  # the other record was applied
    assert units["0000:05:00.0"]["state"] == "claimed"
    assert loop.apply_reports() == []  # only the failed record came back, and now applies
    assert_freed_only(loop, ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0"])


def test_poison_and_foreign_messages_end_in_the_dead_letter_queue_counted(loop):
    loop.sqs.send_message(
        QueueUrl=loop.queue,
        MessageBody="{not json",
        MessageGroupId="g",
        MessageDeduplicationId="poison-1",
    )
    foreign = {
        "version": 1,
        "type": "spot-termination",
        "terminationId": "t-foreign",
        "nodeId": "node-b",
        "workloadId": "vm-b",
        "workloadKind": "vm",
        "unitIds": ["0000:04:00.0"],
        "reservationId": "res-x",
        "requestedAt": "2026-11-29T00:00:00Z",
    }
    loop.sqs.send_message(
        QueueUrl=loop.queue,
        MessageBody=json.dumps(foreign),
        MessageGroupId="g2",
        MessageDeduplicationId="foreign-1",
    )
    consumer = loop.consumer()
    loop.drain_consumer(consumer, rounds=30)
    assert consumer.counts["poison"] >= 1
    assert consumer.counts["foreign"] >= 1
    assert loop.dead_letter_count() == 2
    assert state.item(loop.db, "node-b", "UNIT#0000:04:00.0")["claimedBy"] == "vm:vm-b"


class AlwaysFails:
    def stop(self, _termination):
        return Result("failed", "virsh: cannot acquire state change lock")


def test_a_driver_that_keeps_failing_ends_stuck_and_reported_never_terminated(loop):
    loop.reclaim(["0000:04:00.0"])
    consumer = loop.consumer(driver=AlwaysFails())
    rounds = 0
    while loop.dead_letter_count() == 0 and rounds < 20:  # bounded by maxReceiveCount
        consumer.poll_once()
        rounds += 1
    assert loop.dead_letter_count() == 1
    assert consumer.counts["failed"] == 5
    assert loop.apply_reports() == []  # "failed" reports are recorded, nothing closed
    loop.apply_reports()
    workload = state.workload(loop.db, "node-a", "vm-1")
    assert workload["state"] == "terminating"
    assert workload["terminationFailedReports"] == 5
    assert workload["terminationReportedDeliveries"] == 0  # all came before any redelivery
    # The sweeper delivers again (max 2 accepted in this test), then flags it: visibly stuck.
    results = []
    for _ in range(4):
        results.append(loop.sweep())
        time.sleep(0.01)
    assert [r.get("redelivered", 0) for r in results[:2]] == [1, 1]
    assert {"gave_up": 1} in results
    workload = state.workload(loop.db, "node-a", "vm-1")
    assert workload["openTermination"] == "stuck"
    assert workload["state"] == "terminating"
    assert workload["deliveries"] == 2
    assert loop.units()["0000:04:00.0"]["claimedBy"] == "vm:vm-1"
    assert results[-1] == {"stuck": 1}  # still read, and sent again at the slow pace


def test_the_sweeper_reads_only_the_open_terminations_index(loop, dynamodb_calls):
    loop.reclaim(["0000:04:00.0"])
    dynamodb_calls.clear()
    loop.sweep()
    assert "Scan" not in dynamodb_calls
    assert dynamodb_calls["Query"] == 2  # its "open" and "stuck" partitions


def test_a_terminating_workload_from_the_fleet_is_swept_too(
    aws, load_fleet, functions, monkeypatch
):
    monkeypatch.setenv("SWEEPER_GRACE_SECONDS", "0")
    settings.cache_clear()
    load_fleet(
        f.fleet(
            [
                f.node(
                    "node-a",
                    [f.unit("0000:04:00.0")],
                    [f.reservation("res-1", ["0000:04:00.0"])],
                    [f.workload("vm-1", ["0000:04:00.0"], state="terminating")],
                )
            ]
        )
    )
    assert functions["sweeper"].lambda_handler({}, FakeContext()) == {"redelivered": 1}
    settings.cache_clear()


@pytest.mark.parametrize("name", ["terminated", "gone", "duplicate"])
def test_the_report_events_free_pod_5_of_the_demo_fleet(aws, load_fleet, functions, name):
    load_fleet(f.demo_fleet())
    event = event_file(f"termination_reports/{name}.json")
    response = functions["termination_reports"].lambda_handler(event, FakeContext())
    assert response == {"batchItemFailures": []}
    assert "claimedBy" not in state.unit(aws, "node-b7", "0000:1a:00.0")


def test_the_failed_report_event_is_recorded_and_frees_nothing(aws, load_fleet, functions):
    load_fleet(f.demo_fleet())
    before = state.whole_table(aws)
    event = event_file("termination_reports/failed.json")
    assert functions["termination_reports"].lambda_handler(event, FakeContext()) == {
        "batchItemFailures": []
    }
    after = state.whole_table(aws)
    changed = [item for item in after if item not in before]
    [workload] = changed  # the terminating workload alone, still open
    assert (workload["PK"], workload["SK"]) == ("NODE#node-b7", "WL#pod-5")
    assert workload["openTermination"] == "open"
    assert workload["terminationFailedReports"] == 1
    assert workload["terminationReportedDeliveries"] == 0
    assert "terminationLastReportedAt" in workload
    assert len(after) == len(before)
    assert state.unit(aws, "node-b7", "0000:1a:00.0")["claimedBy"] == "pod:pod-5"


def test_the_scheduled_event_runs_a_sweep(aws, load_fleet, functions, monkeypatch):
    monkeypatch.setenv("SWEEPER_GRACE_SECONDS", "0")
    settings.cache_clear()
    load_fleet(f.demo_fleet())
    event = event_file("sweeper/scheduled.json")
    assert functions["sweeper"].lambda_handler(event, FakeContext()) == {"redelivered": 1}
    settings.cache_clear()


def test_the_local_pumps_warm_up_batch_is_dropped_and_changes_nothing(aws, load_fleet, functions):
    load_fleet(f.demo_fleet())
    before = state.whole_table(aws)
    event = warm_up_event("arn:aws:sqs:us-east-1:123456789012:TerminationReportsQueue")
    assert functions["termination_reports"].lambda_handler(event, FakeContext()) == {
        "batchItemFailures": []
    }
    assert state.whole_table(aws) == before


class CountingDriver:
    def __init__(self) -> None:
        self.calls = 0

    def stop(self, _termination):
        self.calls += 1
        return Result("terminated", None)


def test_a_restarted_agent_with_its_state_file_does_not_stop_a_workload_twice(loop, tmp_path):
    loop.reclaim(["0000:04:00.0"])
    done_file = tmp_path / "done"
    driver = CountingDriver()

    def die_after_recording(step: str) -> None:
        if step == "recorded":
            raise Crash

    first = Consumer(loop.sqs, "node-a", loop.queue, loop.reports, driver, DoneLog(done_file),
                     wait_seconds=0, visibility_timeout=0, checkpoint=die_after_recording)  # fmt: skip
    with pytest.raises(Crash):
        first.poll_once()
    restarted = Consumer(loop.sqs, "node-a", loop.queue, loop.reports, driver, DoneLog(done_file),
                         wait_seconds=0, visibility_timeout=0)  # fmt: skip
    loop.drain_consumer(restarted)
    assert driver.calls == 1
    assert restarted.counts["duplicate"] == 1
    loop.apply_reports()
    loop.apply_reports()
    assert_freed_only(loop, ["0000:04:00.0"])


def test_sigterm_finishes_the_message_in_hand(loop):
    loop.reclaim(["0000:04:00.0"])
    consumer = None

    class StopsMidWork:
        def stop(self, termination):
            consumer.stop()  # SIGTERM arrives while the workload is being stopped
            return Result("terminated", None)

    consumer = loop.consumer(driver=StopsMidWork())
    runner = threading.Thread(target=consumer.run)
    runner.start()
    runner.join(timeout=20)
    assert not runner.is_alive()  # it returned: no new receive after the stop
    assert consumer.counts["terminated"] == 1
    assert loop.consumer().poll_once() == 0  # the message in hand was deleted, not dropped
    loop.apply_reports()
    assert_freed_only(loop, ["0000:04:00.0"])


def flushed_metrics(printed: str) -> dict[str, float]:
    """The metrics of the Powertools EMF documents a function printed: name -> value."""
    values: dict[str, float] = {}
    for line in printed.splitlines():
        if not line.startswith("{") or '"_aws"' not in line:
            continue
        document = json.loads(line)
        for directive in document["_aws"]["CloudWatchMetrics"]:
            for metric in directive["Metrics"]:
                value = document[metric["Name"]]
                values[metric["Name"]] = sum(value) if isinstance(value, list) else value
    return values


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("terminated", {"TerminationsConfirmed": 1}),
        ("gone", {"TerminationsConfirmed": 1}),
        # Two reports of one termination: the first closes it, the second finds none open.
        ("duplicate", {"TerminationsConfirmed": 1, "TerminationReportsDropped": 1}),
        ("failed", {"TerminationFailuresReported": 1}),
    ],
)
def test_the_reports_function_flushes_the_metric_of_each_outcome(
    aws, load_fleet, functions, capsys, name, expected
):
    load_fleet(f.demo_fleet())
    capsys.readouterr()
    event = event_file(f"termination_reports/{name}.json")
    functions["termination_reports"].lambda_handler(event, FakeContext())
    assert flushed_metrics(capsys.readouterr().out) == expected
