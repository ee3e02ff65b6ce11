"""What an alarm or an operator reads is behaviour: the exact metrics and log lines (level
and message) of the reclaim's outbox and of the termination reports, for each outcome.

A committed reclaim whose messages all went out counts no ``TerminationsUnqueued`` and logs
no error (that metric and that error are how an operator learns the sweeper has work); a
report that closed its termination counts ``TerminationsConfirmed``, never
``TerminationReportsDropped``, and the other way round."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from reservations.kernel.bodies import RawBody
from reservations.kernel.observability import metrics
from reservations.kernel.writes import WriteConflict
from reservations.terminations.models import TerminationReport
from reservations.terminations.reports import ReportConflict, apply_report
from tests.support.fakes import FakeQueue, FakeTable, ports
from tests.support.use_cases import BROKER, NOW, UNITS
from tests.support.writes import reclaim

pytestmark = pytest.mark.disable_socket

UNSENT = "terminations committed but not sent; the sweeper will deliver them"
CONFIRMED = "termination confirmed; units free"
DROPPED = "report for no open termination: dropped"
NOT_YET = "node could not stop the workload yet"
REOPENED = "stuck termination answered by its node: open again"
# Reclaiming every unit of res-1: vm-spot and vm-span are terminated now (2 messages),
# vm-term already was (no message), vm-res is reserved (skipped).
RECLAIM_METRICS = {
    "Reclaims": [1.0],
    "UnitsReclaimed": [5.0],
    "WorkloadsTerminated": [2.0],
    "WorkloadsSkipped": [1.0],
}


def counted(emitted: dict[str, Any]) -> dict[str, list[float]]:
    assert all(m["Unit"] == "Count" for m in emitted.values()), emitted
    return {name: list(metric["Value"]) for name, metric in emitted.items()}


def records(caplog: pytest.LogCaptureFixture) -> list[Any]:
    return [r for r in caplog.records if r.name == "reservations"]


def lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [(r.levelname, r.getMessage()) for r in records(caplog)]


def reclaim_all(store: FakeTable, queue: Any, clock: Any) -> int:
    raw = RawBody(json.dumps({"unitIds": UNITS}))
    return reclaim(BROKER, "node-a", "res-1", raw, None, ports(store, clock, queue)).status


class HalfQueue(FakeQueue):
    """Accepts the first message of each batch only."""

    def send_batch(self, queue_url: str, messages: Any) -> set[str]:
        return super().send_batch(queue_url, list(messages)[:1])


# --- the reclaim's outbox ------------------------------------------------------------------


def test_a_reclaim_whose_messages_all_went_out_counts_none_unqueued_and_logs_no_error(
    store, queue, clock, emitted, said
):
    assert reclaim_all(store, queue, clock) == 200
    assert len(queue.sent("https://sqs.test/node-a.fifo")) == 2
    assert counted(emitted) == RECLAIM_METRICS
    assert lines(said) == [("INFO", "reclaim committed")]


@pytest.mark.parametrize(
    ("make_queue", "unsent"),
    [(lambda: HalfQueue(), 1), (lambda: _down(), 2)],
    ids=["one-of-two-accepted", "sqs-down"],
)
def test_each_message_sqs_did_not_take_is_counted_unqueued_with_one_error(
    store, clock, emitted, said, make_queue, unsent
):
    assert reclaim_all(store, make_queue(), clock) == 200
    assert counted(emitted) == {**RECLAIM_METRICS, "TerminationsUnqueued": [float(unsent)]}
    assert lines(said) == [("INFO", "reclaim committed"), ("ERROR", UNSENT)]
    [error] = [r for r in records(said) if r.levelname == "ERROR"]
    assert (error.unsent, error.nodeId) == (unsent, "node-a")


def _down() -> FakeQueue:
    queue = FakeQueue()
    queue.down = True
    return queue


def test_a_node_without_a_queue_counts_every_message_unqueued(store, queue, clock, emitted, said):
    partition = store.nodes["node-a"]
    partition.node = replace(partition.node, queue_url=None)
    assert reclaim_all(store, queue, clock) == 200
    assert counted(emitted) == {**RECLAIM_METRICS, "TerminationsUnqueued": [2.0]}
    assert lines(said) == [("INFO", "reclaim committed"), ("ERROR", UNSENT)]


def test_a_reclaim_that_terminates_nothing_sends_nothing_and_counts_none_unqueued(
    store, queue, clock, emitted, said
):
    queue.down = True  # would fail any send: there must be none
    raw = RawBody(json.dumps({"unitIds": [UNITS[3]]}))  # vm-res: reserved, skipped
    assert reclaim(BROKER, "node-a", "res-1", raw, None, ports(store, clock, queue)).status == 200
    assert counted(emitted) == {
        "Reclaims": [1.0],
        "UnitsReclaimed": [1.0],
        "WorkloadsTerminated": [0.0],
        "WorkloadsSkipped": [1.0],
    }
    assert lines(said) == [("INFO", "reclaim committed")]


# --- termination reports -------------------------------------------------------------------


def report(outcome: str = "terminated", termination_id: str = "t-old") -> TerminationReport:
    return TerminationReport(
        termination_id=termination_id,
        node_id="node-a",
        workload_id="vm-term",
        outcome=outcome,
        reported_at=NOW,
    )


@pytest.mark.parametrize("outcome", ["terminated", "gone"])
def test_a_report_that_closes_its_termination_is_confirmed_never_dropped(
    store, emitted, said, outcome
):
    assert apply_report(report(outcome), NOW, store, store) == "closed"
    assert counted(emitted) == {"TerminationsConfirmed": [1.0]}
    assert lines(said) == [("INFO", CONFIRMED)]
    [line] = records(said)
    assert (line.terminationId, line.workloadId, line.outcome) == ("t-old", "vm-term", outcome)


@pytest.mark.parametrize(
    "late",
    [report(), report("gone"), report(termination_id="t-other"), report("failed", "t-other")],
    ids=["duplicate", "duplicate-gone", "another-termination", "failed-for-none"],
)
def test_a_report_for_no_open_termination_is_dropped_never_confirmed(store, emitted, said, late):
    if late.termination_id == "t-old":
        apply_report(late, NOW, store, store)  # the first one closes it
        metrics.clear_metrics()
        said.clear()
    assert apply_report(late, NOW, store, store) == "unknown"
    assert counted(emitted) == {"TerminationReportsDropped": [1.0]}
    assert lines(said) == [("WARNING", DROPPED)]


def test_a_failed_report_is_a_warning_and_counted_as_a_failure(store, emitted, said):
    assert apply_report(report("failed"), NOW, store, store) == "failed"
    assert counted(emitted) == {"TerminationFailuresReported": [1.0]}
    assert lines(said) == [("WARNING", NOT_YET)]


def test_a_failed_report_on_a_stuck_termination_also_says_and_counts_it_reopened(
    store, emitted, said
):
    partition = store.nodes["node-a"]
    partition.workloads["vm-term"] = replace(
        partition.workloads["vm-term"],
        termination=replace(
            partition.workloads["vm-term"].termination,
            deliveries=3,
            stuck_at=NOW - timedelta(minutes=1),
        ),
    )
    assert apply_report(report("failed"), NOW, store, store) == "failed"
    assert counted(emitted) == {"TerminationFailuresReported": [1.0], "TerminationsReopened": [1.0]}
    assert lines(said) == [("WARNING", NOT_YET), ("WARNING", REOPENED)]


def test_a_report_that_kept_conflicting_counts_nothing_and_is_retried(store, clock, emitted, said):
    class Racing(FakeTable):
        def commit(self, write: Any, answer: Any = None) -> None:
            raise WriteConflict("ConditionalCheckFailed")

    racing = Racing(clock)
    racing.nodes = store.nodes
    with pytest.raises(ReportConflict):
        apply_report(report(), NOW, racing, racing)
    assert counted(emitted) == {}
    assert lines(said) == []
