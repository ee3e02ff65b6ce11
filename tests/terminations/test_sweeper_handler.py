"""No committed termination is lost: the sweeper over moto, with the clock in the test's hand.

SQS outages, missing queues, stale index rows, giving up and the operator command. The
terminating workload comes from the fleet file (as a reclaim would leave it), so these tests
exercise the outbox alone.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from devstack import fleet_documents as f
from devstack.functions import FakeContext, load_function
from reservations.kernel.aws import clients
from reservations.kernel.settings import settings
from reservations.kernel.times import parse_time
from reservations.nodes.models.partition import TerminationState
from reservations.nodes.table import queue as node_queue
from reservations.terminations import sweeper
from reservations.terminations.models import TerminationReport
from reservations.terminations.reports import apply_report, close_termination
from reservations.terminations.rules.delivery import RedeliveryPolicy
from reservations.terminations.sweeper import stuck_event
from reservations.terminations.table import queues
from reservations.terminations.table.store import TerminationTable
from reservations_tools import terminations as command
from tests.support import state
from tests.support.faults import on_call
from tests.support.ports import every_writer_table

pytestmark = pytest.mark.moto

TERMINATION = "t-vm-1"
POLICY = RedeliveryPolicy(
    grace=timedelta(seconds=60),
    confirm_deadline=timedelta(seconds=600),
    stuck_resend=timedelta(seconds=3600),
    max_deliveries=3,
)


class World:
    """One node with one terminating spot workload, and a sweeper driven by a fake clock."""

    def __init__(self, db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self.db = db
        self.sqs = boto3.client("sqs")
        self.queue = state.node_queue_url(db, "node-a")
        self.requested_at = parse_time(
            state.workload(db, "node-a", "vm-1")["terminationRequestedAt"]
        )
        self.metrics: Counter[str] = Counter()
        self.sent: list[str] = []  # de-duplication ids of the sends SQS accepted
        real_add = sweeper.metrics.add_metric

        def add_metric(name: str, unit: Any, value: float) -> None:
            self.metrics[name] += int(value)
            real_add(name=name, unit=unit, value=value)

        monkeypatch.setattr(sweeper.metrics, "add_metric", add_metric)

    def send(self, url: str, message: Any, dedup: str) -> queues.SendResult:
        result = queues.send_termination(url, message, dedup)
        if result is queues.SendResult.ACCEPTED:
            self.sent.append(dedup)
        return result

    def sweep(self, at: datetime, store: Any = None) -> dict[str, int]:
        return dict(sweeper.sweep(at, POLICY, store or TerminationTable(), self.send))

    def after(self, seconds: float) -> datetime:
        return self.requested_at + timedelta(seconds=seconds)

    def workload(self) -> dict[str, Any]:
        return state.workload(self.db, "node-a", "vm-1")

    def queued(self) -> list[dict[str, Any]]:
        return state.drain(self.sqs, self.queue)

    def index(self, partition: str) -> list[str]:
        items = self.db.query(
            TableName="ReservationsTable",
            IndexName="OpenTerminations",
            KeyConditionExpression="openTermination = :p",
            ExpressionAttributeValues={":p": {"S": partition}},
        )["Items"]
        return [i["terminationId"]["S"] for i in items]


@pytest.fixture
def world(aws, load_fleet, monkeypatch) -> World:
    load_fleet(
        f.fleet(
            [
                f.node(
                    "node-a",
                    [f.unit("0000:04:00.0")],
                    [f.reservation("res-1", ["0000:04:00.0"])],  # reclaimed: no longer released
                    [
                        f.workload(
                            "vm-1", ["0000:04:00.0"], state="terminating", terminationId=TERMINATION
                        )
                    ],
                )
            ]
        )
    )
    return World(aws, monkeypatch)


def sqs_down() -> Any:
    """Every send fails, alternately refused by SQS and unreachable."""
    calls = {"n": 0}

    def send_message(_params: dict[str, Any]) -> None:
        calls["n"] += 1
        if calls["n"] % 2:
            raise ClientError(
                {"Error": {"Code": "ServiceUnavailable", "Message": "x"}}, "SendMessage"
            )
        raise EndpointConnectionError(endpoint_url="https://sqs.us-east-1.amazonaws.com")

    return on_call(clients.sqs(), "SendMessage", before=send_message)


def test_an_sqs_outage_of_more_than_a_day_is_never_a_delivery_and_ends_delivered(
    world,
):
    with sqs_down():
        # Sweeps every 20 minutes for 26 hours, far past every deadline and max delivery.
        results = [world.sweep(world.after(60 + 1200 * n)) for n in range(79)]
    assert results == [{"unsent": 1}] * 79
    workload = world.workload()
    assert "deliveries" not in workload  # nothing was accepted, nothing counted
    assert workload["openTermination"] == "open"  # never given up
    assert world.metrics["SweeperGiveUps"] == 0
    assert world.metrics["TerminationSendsFailed"] == 79
    assert world.queued() == []

    assert world.sweep(world.after(26 * 3600 + 120)) == {"redelivered": 1}
    assert world.workload()["deliveries"] == 1
    [message] = world.queued()
    assert message["terminationId"] == TERMINATION
    assert world.sent == [TERMINATION]  # the first sweeper send reuses the termination id


def test_an_outage_between_deliveries_does_not_advance_the_count(world):
    assert world.sweep(world.after(60)) == {"redelivered": 1}
    with sqs_down():
        assert world.sweep(world.after(660)) == {"unsent": 1}
        assert world.sweep(world.after(3600)) == {"unsent": 1}
    assert world.workload()["deliveries"] == 1
    assert world.sweep(world.after(3660)) == {"redelivered": 1}
    assert world.workload()["deliveries"] == 2
    assert world.sent == [TERMINATION, f"{TERMINATION}#r1"]


def test_the_first_sweeper_send_is_dropped_by_sqs_when_the_reclaims_own_send_made_it(world):
    [listed] = TerminationTable().listed(TerminationState.OPEN)
    message = sweeper.message(listed, world.requested_at)
    assert queues.send_terminations(world.queue, [message]) == {TERMINATION}  # the reclaim's
    assert world.sweep(world.after(30)) == {"waiting": 1}  # within the grace period
    assert world.sweep(world.after(61)) == {"redelivered": 1}
    assert len(world.queued()) == 1  # same de-duplication id within five minutes
    assert world.sweep(world.after(61 + 600)) == {"redelivered": 1}
    assert len(world.queued()) == 1  # #r1: a real redelivery, not swallowed


def test_a_node_without_a_queue_url_waits_visibly_and_counts_no_delivery(world, caplog):
    world.db.update_item(
        TableName="ReservationsTable",
        Key={"PK": {"S": "NODE#node-a"}, "SK": {"S": "#NODE"}},
        UpdateExpression="REMOVE queueUrl",
    )
    assert world.sweep(world.after(60)) == {"waiting_for_queue": 1}
    assert world.metrics["TerminationsWaitingForQueue"] == 1
    [line] = [r for r in caplog.records if "queue" in r.getMessage()]
    assert line.levelname == "WARNING"
    assert line.nodeId == "node-a"
    assert line.terminationId == TERMINATION
    assert "deliveries" not in world.workload()


def test_a_deleted_queue_waits_and_is_delivered_once_the_queue_exists_again(world):
    name = world.queue.rsplit("/", 1)[1]
    world.sqs.delete_queue(QueueUrl=world.queue)
    for minute in (1, 2, 30, 600):
        assert world.sweep(world.after(60 * minute)) == {"waiting_for_queue": 1}
    assert world.metrics["TerminationsWaitingForQueue"] == 4
    assert "deliveries" not in world.workload()

    dead_letters = world.sqs.get_queue_url(QueueName="SpotTerminationDeadLetterQueue.fifo")
    arn = world.sqs.get_queue_attributes(
        QueueUrl=dead_letters["QueueUrl"], AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]
    assert node_queue.ensure_node_queue(world.sqs, "reservations-node-", "node-a", arn).endswith(
        name
    )
    assert world.sweep(world.after(36001)) == {"redelivered": 1}
    assert [m["terminationId"] for m in world.queued()] == [TERMINATION]
    assert world.workload()["deliveries"] == 1


def deliver_until_stuck(world: World) -> datetime:
    """Three accepted deliveries without a report, then the give-up; its time."""
    assert world.sweep(world.after(60)) == {"redelivered": 1}
    assert world.sweep(world.after(660)) == {"redelivered": 1}
    assert world.sweep(world.after(1260)) == {"redelivered": 1}
    assert world.sweep(world.after(1860)) == {"gave_up": 1}
    return world.after(1860)


def test_after_max_accepted_deliveries_it_is_flagged_once_and_still_sent_slowly(world):
    stuck_at = deliver_until_stuck(world)
    workload = world.workload()
    assert workload["openTermination"] == "stuck"
    assert parse_time(workload["stuckAt"]) == stuck_at
    assert world.index("stuck") == [TERMINATION]
    assert world.index("open") == []
    assert world.metrics["SweeperGiveUps"] == 1

    last = world.after(1260)
    assert world.sweep(last + timedelta(seconds=3599)) == {"stuck": 1}
    assert world.sweep(last + timedelta(seconds=3600)) == {"redelivered": 1}
    assert world.sweep(last + timedelta(seconds=3600 + 1800)) == {"stuck": 1}
    assert world.sweep(last + timedelta(seconds=7200)) == {"redelivered": 1}
    assert world.workload()["deliveries"] == 5
    assert world.workload()["openTermination"] == "stuck"
    assert world.metrics["SweeperGiveUps"] == 1  # the alarm fires once, not every sweep
    assert world.sent[-2:] == [f"{TERMINATION}#r3", f"{TERMINATION}#r4"]


def test_a_report_closes_a_stuck_termination_like_an_open_one(world):
    deliver_until_stuck(world)
    report = TerminationReport(
        termination_id=TERMINATION,
        node_id="node-a",
        workload_id="vm-1",
        outcome="terminated",
        reported_at=datetime.now(UTC),
    )
    assert close_termination(report, datetime.now(UTC), every_writer_table()) == "closed"
    assert state.item(world.db, "node-a", "WL#vm-1") is None
    assert "claimedBy" not in state.unit(world.db, "node-a", "0000:04:00.0")
    assert world.index("stuck") == []
    assert world.sweep(world.after(86400)) == {}


def node_report(outcome: str) -> TerminationReport:
    return TerminationReport(
        termination_id=TERMINATION,
        node_id="node-a",
        workload_id="vm-1",
        outcome=outcome,
        detail="virsh: cannot acquire state change lock" if outcome == "failed" else None,
        reported_at=datetime.now(UTC),
    )


def test_a_failed_report_is_stored_on_the_item_and_moves_a_stuck_one_back_to_open(world):
    stuck_at = deliver_until_stuck(world)
    version = world.workload()["version"]
    reported_at = stuck_at + timedelta(seconds=30)
    assert (
        apply_report(node_report("failed"), reported_at, every_writer_table(), TerminationTable())
        == "failed"
    )
    workload = world.workload()
    assert workload["terminationReportedDeliveries"] == 3
    assert parse_time(workload["terminationLastReportedAt"]) == reported_at
    assert workload["terminationFailedReports"] == 1
    assert workload["deliveries"] == 3  # kept: the next de-duplication id is #r3
    assert "stuckAt" not in workload
    assert workload["openTermination"] == "open"
    assert workload["version"] == version
    assert world.index("open") == [TERMINATION]
    assert world.index("stuck") == []

    # Answered: the sweeper needs max_deliveries more unanswered deliveries to flag it again.
    assert world.sweep(world.after(1900)) == {"redelivered": 1}
    assert world.sweep(world.after(2500)) == {"redelivered": 1}
    assert world.sweep(world.after(3100)) == {"redelivered": 1}
    assert world.sweep(world.after(3700)) == {"gave_up": 1}
    assert world.sent[-3:] == [f"{TERMINATION}#r3", f"{TERMINATION}#r4", f"{TERMINATION}#r5"]
    assert world.index("stuck") == [TERMINATION]
    assert world.metrics["SweeperGiveUps"] == 2


def test_a_late_failed_report_for_a_closed_termination_writes_nothing(world):
    assert (
        apply_report(
            node_report("terminated"), datetime.now(UTC), every_writer_table(), TerminationTable()
        )
        == "closed"
    )
    before = state.whole_table(world.db)
    assert (
        apply_report(
            node_report("failed"), datetime.now(UTC), every_writer_table(), TerminationTable()
        )
        == "unknown"
    )
    assert state.whole_table(world.db) == before


def test_the_flag_is_not_set_on_a_read_a_report_has_since_answered(world):
    for seconds in (60, 660, 1260):
        world.sweep(world.after(seconds))
    [read] = TerminationTable().listed(TerminationState.OPEN)
    assert (
        apply_report(
            node_report("failed"), world.after(1800), every_writer_table(), TerminationTable()
        )
        == "failed"
    )
    stale = stuck_event(read, "org-acme", world.after(1860))
    assert not TerminationTable().mark_stuck(read, world.after(1860), stale)
    assert world.workload()["openTermination"] == "open"
    assert events_of(world, "workload.termination_stuck") == []  # nor its event
    # Read again (one failed report, then silence): flagged at last, with its event.
    [fresh] = TerminationTable().listed(TerminationState.OPEN)
    flagged = stuck_event(fresh, "org-acme", world.after(1860))
    assert TerminationTable().mark_stuck(fresh, world.after(1860), flagged)
    assert world.index("stuck") == [TERMINATION]
    [event] = events_of(world, "workload.termination_stuck")
    assert (event["id"], event["data"]["terminationId"]) == (flagged.id, TERMINATION)


def events_of(world, event_type: str) -> list:
    return state.events(world.db, "node-a", event_type=event_type)


class StaleIndex(TerminationTable):
    """The index as read a moment before a report closed the termination."""

    def listed(self, partition: str):
        rows = list(super().listed(partition))
        for row in rows:
            report = TerminationReport(
                termination_id=row.termination_id,
                node_id=row.node_id,
                workload_id=row.workload.id,
                outcome="gone",
                reported_at=datetime.now(UTC),
            )
            assert close_termination(report, datetime.now(UTC), every_writer_table()) == "closed"
        return iter(rows)


def test_a_termination_closed_after_the_index_was_read_is_not_sent_again(world, dynamodb_calls):
    assert world.sweep(world.after(60), StaleIndex()) == {"closed": 1}
    assert world.queued() == []
    assert world.sent == []
    assert dynamodb_calls["GetItem"] >= 1  # the re-read


def test_the_operator_lists_stuck_terminations(world, capsys):
    assert command.main(["stuck"]) == 0
    assert capsys.readouterr().out == "no stuck terminations\n"
    deliver_until_stuck(world)
    capsys.readouterr()
    assert command.main(["stuck", "--table", "ReservationsTable", "--region", "us-east-1"]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split()[:4] == ["NODE", "WORKLOAD", "TERMINATION", "AGE"]
    cells = row.split()
    assert cells[:3] == ["node-a", "vm-1", TERMINATION]
    assert cells[4] == "3"  # deliveries


def test_the_operator_redrives_one_at_once_counted_as_a_delivery(world, capsys):
    deliver_until_stuck(world)
    world.queued()
    assert command.main(["redrive", "node-a", "vm-1"]) == 0
    assert "delivery 4" in capsys.readouterr().out
    assert [m["terminationId"] for m in world.queued()] == [TERMINATION]
    assert world.workload()["deliveries"] == 4
    assert world.workload()["openTermination"] == "stuck"  # until a report closes it


def test_the_operator_redrive_reports_what_it_could_not_do(world, capsys, monkeypatch):
    assert command.main(["redrive", "node-a", "vm-unknown"]) == 1
    assert "no open termination" in capsys.readouterr().err
    with monkeypatch.context() as patch:
        patch.setattr(
            command,
            "send_termination",
            lambda *_a, **_k: queues.SendResult.FAILED,
        )
        assert command.main(["redrive", "node-a", "vm-1"]) == 1
    assert "did not accept" in capsys.readouterr().err
    assert "deliveries" not in world.workload()
    world.sqs.delete_queue(QueueUrl=world.queue)
    assert command.main(["redrive", "node-a", "vm-1"]) == 1
    assert "has no queue" in capsys.readouterr().err
    assert "deliveries" not in world.workload()


def test_a_pass_short_of_time_defers_its_sends_visibly_and_the_next_one_delivers(
    world, monkeypatch, caplog
):
    monkeypatch.setenv("SWEEPER_GRACE_SECONDS", "0")
    settings.cache_clear()
    function = load_function("sweeper")
    # 11 s left: under the 12 s one termination may take against a hanging SQS.
    assert function.lambda_handler({}, FakeContext(timeout_ms=11_000)) == {"deferred": 1}
    assert world.metrics["TerminationsDeferred"] == 1
    assert "sweep out of time; the rest wait for the next pass" in caplog.text
    assert world.queued() == []
    assert "deliveries" not in world.workload()  # none yet
    assert function.lambda_handler({}, FakeContext()) == {"redelivered": 1}
    assert [m["terminationId"] for m in world.queued()] == [TERMINATION]
