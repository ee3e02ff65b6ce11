"""Reports over the fakes: which report closes which termination and what it frees."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from reservations.kernel.writes import WriteConflict
from reservations.nodes.models.partition import WorkloadState
from reservations.terminations import reports as termination_reports
from reservations.terminations.models import TerminationReport
from reservations.terminations.reports import ReportConflict, apply_report
from tests.support.fakes import FakeTable
from tests.support.use_cases import NOW, UNITS

pytestmark = pytest.mark.disable_socket


def report(termination_id="t-old", workload_id="vm-term", outcome="terminated", node="node-a"):
    return TerminationReport(
        termination_id=termination_id,
        node_id=node,
        workload_id=workload_id,
        outcome=outcome,
        reported_at=NOW,
    )


def test_a_report_closes_its_termination_and_frees_the_units(store):
    assert apply_report(report(), NOW, store, store) == "closed"
    partition = store.nodes["node-a"]
    assert "vm-term" not in partition.workloads
    assert partition.units[UNITS[4]].claimed_by is None
    [closed] = store.history
    assert (closed.termination_id, closed.outcome) == ("t-old", "terminated")


def test_a_unit_already_held_by_another_workload_keeps_its_claim(store):
    partition = store.nodes["node-a"]
    partition.units[UNITS[4]] = replace(partition.units[UNITS[4]], claimed_by="vm:vm-next")
    assert apply_report(report(outcome="gone"), NOW, store, store) == "closed"
    assert partition.units[UNITS[4]].claimed_by == "vm:vm-next"


@pytest.mark.parametrize(
    "late",
    [
        report(termination_id="t-other"),  # another termination of the same workload
        report(workload_id="vm-spot", termination_id="t-old"),  # a running workload
        report(workload_id="vm-gone"),
        report(node="node-x"),
    ],
)
def test_a_report_for_no_open_termination_changes_nothing(store, late):
    before = {k: dict(v.workloads) for k, v in store.nodes.items()}
    assert apply_report(late, NOW, store, store) == "unknown"
    assert {k: dict(v.workloads) for k, v in store.nodes.items()} == before
    assert store.writes == 0


def test_a_duplicate_report_is_unknown_the_second_time(store):
    assert apply_report(report(), NOW, store, store) == "closed"
    assert apply_report(report(), NOW + timedelta(seconds=1), store, store) == "unknown"


def vm_term(store):
    return store.nodes["node-a"].workloads["vm-term"]


def delivered(store, deliveries: int, **changes) -> None:
    """vm-term as the sweeper leaves it after ``deliveries`` accepted sends."""
    termination = replace(
        vm_term(store).termination,
        deliveries=deliveries,
        last_delivered_at=NOW - timedelta(minutes=1),
        **changes,
    )
    store.nodes["node-a"].workloads["vm-term"] = replace(vm_term(store), termination=termination)


def test_failed_is_recorded_and_leaves_the_termination_open_for_the_node_to_retry(store):
    delivered(store, 2)
    before = vm_term(store)
    assert apply_report(report(outcome="failed"), NOW, store, store) == "failed"
    after = vm_term(store)
    assert after.state is WorkloadState.TERMINATING
    assert after.termination.reported_deliveries == 2  # the deliveries it answered
    assert after.termination.last_reported_at == NOW
    assert after.termination.failed_reports == 1
    assert after.termination.deliveries == 2  # never reset: the de-duplication ids need it
    assert after.version == before.version
    assert store.nodes["node-a"].units[UNITS[4]].claimed_by == "vm:vm-term"
    assert store.history == []


def test_each_failed_report_moves_the_reported_count_to_the_deliveries_so_far(store):
    assert apply_report(report(outcome="failed"), NOW, store, store) == "failed"
    assert vm_term(store).termination.reported_deliveries == 0  # before any sweeper send
    delivered(store, 4)
    later = NOW + timedelta(minutes=30)
    assert apply_report(report(outcome="failed"), later, store, store) == "failed"
    assert vm_term(store).termination.reported_deliveries == 4
    assert vm_term(store).termination.last_reported_at == later
    assert vm_term(store).termination.failed_reports == 2


def test_a_failed_report_on_a_stuck_termination_opens_it_again(store):
    delivered(store, 5, stuck_at=NOW - timedelta(minutes=1))
    assert apply_report(report(outcome="failed"), NOW, store, store) == "failed"
    assert vm_term(store).termination.stuck_at is None
    assert vm_term(store).termination.reported_deliveries == 5


@pytest.mark.parametrize(
    "late",
    [
        report(termination_id="t-other", outcome="failed"),
        report(workload_id="vm-spot", outcome="failed"),  # a running workload
        report(workload_id="vm-gone", outcome="failed"),
        report(node="node-x", outcome="failed"),
    ],
)
def test_a_failed_report_for_no_open_termination_changes_nothing(store, late):
    before = {k: dict(v.workloads) for k, v in store.nodes.items()}
    assert apply_report(late, NOW, store, store) == "unknown"
    assert {k: dict(v.workloads) for k, v in store.nodes.items()} == before
    assert store.failed_reports == []


def test_a_late_failed_report_for_a_closed_termination_changes_nothing(store):
    assert apply_report(report(), NOW, store, store) == "closed"
    nodes = {k: (dict(v.units), dict(v.workloads)) for k, v in store.nodes.items()}
    assert (
        apply_report(report(outcome="failed"), NOW + timedelta(seconds=1), store, store)
        == "unknown"
    )
    assert {k: (dict(v.units), dict(v.workloads)) for k, v in store.nodes.items()} == nodes
    assert store.failed_reports == []
    assert len(store.history) == 1


@pytest.fixture
def told(monkeypatch):
    """What the report function logs (warnings) and counts."""
    said: list[tuple[str, dict]] = []
    counted: list[str] = []
    monkeypatch.setattr(
        termination_reports.logger, "warning", lambda message, extra: said.append((message, extra))
    )
    monkeypatch.setattr(
        termination_reports.metrics, "add_metric", lambda **metric: counted.append(metric["name"])
    )
    return said, counted


def test_a_failed_report_is_logged_with_its_detail_and_counted(store, told):
    said, counted = told
    delivered(store, 1)
    failed = report(outcome="failed").model_copy(update={"detail": "virsh: lock timeout"})
    apply_report(failed, NOW, store, store)
    [(message, extra)] = said
    assert message == "node could not stop the workload yet"
    assert extra["nodeId"] == "node-a"
    assert extra["workloadId"] == "vm-term"
    assert extra["terminationId"] == "t-old"
    assert extra["detail"] == "virsh: lock timeout"
    assert (extra["deliveries"], extra["failedReports"]) == (1, 1)
    assert counted == ["TerminationFailuresReported"]


def test_reopening_a_stuck_termination_is_said_and_counted(store, told):
    said, counted = told
    delivered(store, 5, stuck_at=NOW - timedelta(minutes=1))
    apply_report(report(outcome="failed"), NOW, store, store)
    assert [m for m, _ in said] == [
        "node could not stop the workload yet",
        "stuck termination answered by its node: open again",
    ]
    assert counted == ["TerminationFailuresReported", "TerminationsReopened"]
    # Which termination is open again, for the operator who saw it flagged stuck.
    assert _names(said[1][1]) == ("node-a", "vm-term", "t-old")


def test_a_failed_report_for_no_open_termination_is_said_dropped(store, told):
    said, counted = told
    apply_report(report(termination_id="t-other", outcome="failed"), NOW, store, store)
    assert [m for m, _ in said] == ["report for no open termination: dropped"]
    assert counted == ["TerminationReportsDropped"]
    assert _names(said[0][1]) == ("node-a", "vm-term", "t-other")


def _names(extra: dict) -> tuple[str, str, str]:
    return extra["nodeId"], extra["workloadId"], extra["terminationId"]


class Racing(FakeTable):
    losses = 0

    def commit(self, write, answer=None):
        if self.losses:
            self.losses -= 1
            raise WriteConflict("ConditionalCheckFailed")
        super().commit(write, answer)


@pytest.fixture
def racing(store, clock):
    fake = Racing(clock)
    fake.nodes = store.nodes
    return fake


def test_a_conflict_is_read_again(racing):
    racing.losses = 2
    assert apply_report(report(), NOW, racing, racing) == "closed"
    assert racing.reads == 3


def test_a_partition_that_keeps_changing_fails_the_record_for_the_queue_to_retry(racing):
    racing.losses = 3
    with pytest.raises(ReportConflict) as failed:
        apply_report(report(), NOW, racing, racing)
    assert str(failed.value) == "termination t-old kept conflicting"
    assert "vm-term" in racing.nodes["node-a"].workloads


def test_a_version_changed_since_the_read_cancels_the_close(store):
    def placed() -> None:
        partition = store.nodes["node-a"]
        unit = partition.units[UNITS[4]]
        partition.units[UNITS[4]] = replace(unit, version=unit.version + 1)

    store.between_read_and_write.append(placed)
    assert apply_report(report(), NOW, store, store) == "closed"  # read again, then closed
    assert store.reads == 2
