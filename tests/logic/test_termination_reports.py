"""Reports over the fakes: which report closes which termination and what it frees."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from reservations.logic.termination_reports import ReportConflict, apply_report
from reservations.models.messages import TerminationReport
from reservations.models.writes import WriteConflict
from tests.logic.conftest import NOW, UNITS
from tests.support.fakes import FakeNodeStore


def report(termination_id="t-old", workload_id="vm-term", outcome="terminated", node="node-a"):
    return TerminationReport(
        termination_id=termination_id,
        node_id=node,
        workload_id=workload_id,
        outcome=outcome,
        reported_at=NOW,
    )


def test_a_report_closes_its_termination_and_frees_the_units(store):
    assert apply_report(report(), NOW, store) == "closed"
    partition = store.nodes["node-a"]
    assert "vm-term" not in partition.workloads
    assert partition.units[UNITS[4]].claimed_by is None
    [closed] = store.history
    assert (closed.termination_id, closed.outcome) == ("t-old", "terminated")


def test_a_unit_already_held_by_another_workload_keeps_its_claim(store):
    partition = store.nodes["node-a"]
    partition.units[UNITS[4]] = replace(partition.units[UNITS[4]], claimed_by="vm:vm-next")
    assert apply_report(report(outcome="gone"), NOW, store) == "closed"
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
    assert apply_report(late, NOW, store) == "unknown"
    assert {k: dict(v.workloads) for k, v in store.nodes.items()} == before
    assert store.writes == 0


def test_a_duplicate_report_is_unknown_the_second_time(store):
    assert apply_report(report(), NOW, store) == "closed"
    assert apply_report(report(), NOW + timedelta(seconds=1), store) == "unknown"


def test_failed_changes_nothing_and_leaves_the_retry_to_the_node(store):
    assert apply_report(report(outcome="failed"), NOW, store) == "failed"
    assert (store.reads, store.writes) == (0, 0)


class Racing(FakeNodeStore):
    losses = 0

    def close_termination(self, closing):
        if self.losses:
            self.losses -= 1
            raise WriteConflict("ConditionalCheckFailed")
        super().close_termination(closing)


@pytest.fixture
def racing(store, clock):
    fake = Racing(clock)
    fake.nodes = store.nodes
    return fake


def test_a_conflict_is_read_again(racing):
    racing.losses = 2
    assert apply_report(report(), NOW, racing) == "closed"
    assert racing.reads == 3


def test_a_partition_that_keeps_changing_fails_the_record_for_the_queue_to_retry(racing):
    racing.losses = 3
    with pytest.raises(ReportConflict):
        apply_report(report(), NOW, racing)
    assert "vm-term" in racing.nodes["node-a"].workloads


def test_a_version_changed_since_the_read_cancels_the_close(store):
    def placed() -> None:
        partition = store.nodes["node-a"]
        unit = partition.units[UNITS[4]]
        partition.units[UNITS[4]] = replace(unit, version=unit.version + 1)

    store.between_read_and_write.append(placed)
    assert apply_report(report(), NOW, store) == "closed"  # read again, then closed
    assert store.reads == 2
