"""Sweeper and report behaviours that mutation testing showed no test would miss: one
termination never holds back the others in a pass, what a pass reports, the alarmed metric,
and when a closed termination is recorded."""

from __future__ import annotations

from datetime import timedelta

import pytest

from devstack import template
from reservations.logic import sweeper
from reservations.logic.termination_reports import apply_report
from reservations.models.domain import WorkloadState
from reservations.models.messages import TerminationReport
from reservations.observability import metrics
from tests.logic.conftest import NOW, QUEUE, UNITS, workload

POLICY = sweeper.RedeliveryPolicy(
    grace=timedelta(seconds=60),
    confirm_deadline=timedelta(seconds=600),
    stuck_resend=timedelta(seconds=3600),
    max_deliveries=3,
)


def terminating(workload_id: str, requested_ago: timedelta | None, **changes: object):
    return workload(
        workload_id,
        (UNITS[3],),
        state=WorkloadState.TERMINATING,
        termination_id=f"t-{workload_id}",
        termination_reservation_id="res-1",
        termination_requested_at=None if requested_ago is None else NOW - requested_ago,
        **changes,
    )


def add(store, *workloads):
    for w in workloads:
        store.nodes["node-a"].workloads[w.id] = w


def test_terminations_not_yet_due_do_not_hold_back_the_ones_listed_after_them(store, queue):
    fresh = timedelta(seconds=10)
    add(
        store,
        terminating("vm-fresh-1", fresh),
        terminating("vm-fresh-2", fresh),
        terminating("vm-late", timedelta(hours=1)),
    )
    counts = sweeper.sweep(NOW, POLICY, store, queue.send)
    assert dict(counts) == {"redelivered": 2, "waiting": 2}  # vm-term and vm-late
    assert sorted(m.workload_id for m in queue.sent(QUEUE)) == ["vm-late", "vm-term"]


def test_one_given_up_in_a_pass_is_not_sent_and_other_stuck_ones_still_are(store, queue):
    long_ago = NOW - timedelta(hours=3)
    add(
        store,
        terminating(
            "vm-tired",
            timedelta(hours=4),
            termination_deliveries=POLICY.max_deliveries,
            termination_last_delivered_at=long_ago,
        ),
        terminating(
            "vm-stuck",
            timedelta(hours=9),
            termination_deliveries=POLICY.max_deliveries,
            termination_last_delivered_at=long_ago,
            termination_stuck_at=long_ago,
        ),
    )
    del store.nodes["node-a"].workloads["vm-term"]
    counts = sweeper.sweep(NOW, POLICY, store, queue.send)
    assert dict(counts) == {"gave_up": 1, "redelivered": 1}
    assert [m.workload_id for m in queue.sent(QUEUE)] == ["vm-stuck"]


@pytest.fixture
def emitted():
    metrics.clear_metrics()
    yield metrics.metric_set
    metrics.clear_metrics()


def test_giving_up_emits_the_metric_the_stack_alarms_on(store, queue, emitted):
    alarmed = {alarm["MetricName"] for alarm in template.of_type("AWS::CloudWatch::Alarm").values()}
    add(
        store,
        terminating(
            "vm-tired",
            timedelta(hours=4),
            termination_deliveries=POLICY.max_deliveries,
            termination_last_delivered_at=NOW - timedelta(hours=1),
        ),
    )
    sweeper.sweep(NOW, POLICY, store, queue.send)
    assert set(emitted) & alarmed == {"SweeperGiveUps"}


def test_a_termination_without_a_request_time_is_sent_as_requested_now(store, queue):
    add(store, terminating("vm-legacy", None))
    sweeper.sweep(NOW, POLICY, store, queue.send)
    [legacy] = [m for m in queue.sent(QUEUE) if m.workload_id == "vm-legacy"]
    assert legacy.requested_at == NOW


def test_a_closed_termination_is_recorded_at_the_time_the_report_was_applied(store):
    report = TerminationReport(
        termination_id="t-old",
        node_id="node-a",
        workload_id="vm-term",
        outcome="terminated",
        reported_at=NOW,
    )
    assert apply_report(report, NOW + timedelta(minutes=1), store, store) == "closed"
    [closed] = store.history
    assert closed.at == NOW + timedelta(minutes=1)
