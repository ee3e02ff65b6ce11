"""The sweeper over the fakes: when an open termination is sent again, what counts as a
delivery, and when it is flagged stuck."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest
from aws_lambda_powertools.metrics import MetricUnit

from devstack import template
from reservations.kernel.bodies import RawBody
from reservations.nodes.models.partition import Termination, TerminationState, WorkloadState
from reservations.terminations import sweeper
from reservations.terminations.models import OpenTermination, TerminationReport
from reservations.terminations.outbox import message
from reservations.terminations.reports import apply_report
from reservations.terminations.rules.delivery import RedeliveryPolicy
from tests.support.fakes import FakeTable, ports
from tests.support.use_cases import BROKER, NOW, QUEUE, UNITS, workload
from tests.support.writes import reclaim

pytestmark = pytest.mark.disable_socket

POLICY = RedeliveryPolicy(
    grace=timedelta(seconds=60),
    confirm_deadline=timedelta(seconds=600),
    stuck_resend=timedelta(seconds=3600),
    max_deliveries=3,
)
REQUESTED = NOW - timedelta(minutes=5)  # vm-term's termination, from the store fixture


@pytest.fixture
def outbox(store):
    return store


def sweep(outbox, queue, after_requested: float) -> dict[str, int]:
    at = REQUESTED + timedelta(seconds=after_requested)
    return dict(sweeper.sweep(at, POLICY, outbox, queue.send))


def vm_term(store):
    return store.nodes["node-a"].workloads["vm-term"]


def test_within_the_grace_period_the_reclaims_own_send_is_left_alone(outbox, queue):
    assert sweep(outbox, queue, 30) == {"waiting": 1}
    assert queue.messages == {}


def test_after_the_grace_period_it_is_sent_under_the_termination_id(store, outbox, queue):
    assert sweep(outbox, queue, 61) == {"redelivered": 1}
    [message] = queue.sent(QUEUE)
    assert (message.termination_id, message.workload_id) == ("t-old", "vm-term")
    assert message.requested_at == REQUESTED
    assert queue.deduplication_ids == ["t-old"]
    assert vm_term(store).termination.deliveries == 1


def test_a_delivered_one_is_sent_again_after_the_confirm_deadline_under_a_new_id(outbox, queue):
    sweep(outbox, queue, 61)
    assert sweep(outbox, queue, 61 + 599) == {"waiting": 1}
    assert sweep(outbox, queue, 61 + 600) == {"redelivered": 1}
    assert queue.deduplication_ids == ["t-old", "t-old#r1"]


def test_an_outage_of_any_length_is_not_a_delivery(store, outbox, queue):
    queue.down = True
    for hours in range(1, 30):
        assert sweep(outbox, queue, hours * 3600) == {"unsent": 1}
    assert vm_term(store).termination.deliveries == 0
    assert vm_term(store).termination.stuck_at is None
    queue.down = False
    assert sweep(outbox, queue, 30 * 3600) == {"redelivered": 1}
    assert queue.deduplication_ids == ["t-old"]  # the id of the send that never made it


def test_a_node_without_its_queue_waits_visibly(store, outbox, queue):
    queue.missing.add(QUEUE)
    assert sweep(outbox, queue, 61) == {"waiting_for_queue": 1}
    assert vm_term(store).termination.deliveries == 0


def test_after_max_deliveries_it_is_flagged_stuck_and_still_sent_slowly(store, outbox, queue):
    at = 61
    for _ in range(POLICY.max_deliveries):
        assert sweep(outbox, queue, at) == {"redelivered": 1}
        at += 600
    assert sweep(outbox, queue, at) == {"gave_up": 1}
    assert vm_term(store).termination.stuck_at is not None
    assert sweep(outbox, queue, at + 600) == {"stuck": 1}
    assert sweep(outbox, queue, at + 3600) == {"redelivered": 1}
    assert vm_term(store).state is WorkloadState.TERMINATING


def test_one_closed_after_the_index_was_read_is_not_sent(store, outbox, queue):
    class ClosedMeanwhile(FakeTable):
        def read(self, node_id, workload_id):
            return None

    assert sweep(ClosedMeanwhile.sharing(store), queue, 61) == {"closed": 1}
    assert queue.messages == {}


def test_one_another_sweep_delivered_after_the_index_was_read_is_not_sent_again(store, queue):
    class DeliveredMeanwhile(FakeTable):
        def read(self, node_id, workload_id):
            # A second sweeper, running at once, delivers it between this pass's listing
            # (which still shows it due) and its re-read.
            assert sweep(store, queue, 61) == {"redelivered": 1}
            return super().read(node_id, workload_id)

    assert sweep(DeliveredMeanwhile.sharing(store), queue, 61) == {"waiting": 1}
    assert queue.deduplication_ids == ["t-old"]  # one send, the other sweep's
    assert vm_term(store).termination.deliveries == 1


def hanging_sends(store, queue, count: int, timeout: float = 60.0, per_send: float = 3.0):
    """``count`` more due terminations on node-a, and a clock of the invocation that runs
    ``per_send`` seconds with each send (an SQS that hangs until the client gives up)."""
    partition = store.nodes["node-a"]
    for n in range(count):
        term = replace(
            vm_term(store),
            id=f"vm-t{n:02}",
            termination=replace(vm_term(store).termination, id=f"t-{n:02}"),
        )
        partition.workloads[term.id] = term
    elapsed = [0.0]
    real_send = queue.send

    def slow_send(*arguments):
        elapsed[0] += per_send
        return real_send(*arguments)

    return slow_send, lambda: timeout - elapsed[0]


def test_a_pass_stops_sending_before_its_invocation_ends_and_the_next_pass_sends_the_rest(
    store, outbox, queue
):
    queue.down = True
    send, time_left = hanging_sends(store, queue, 29)  # 30 due, 3 s each: 90 s > 60 s
    at = REQUESTED + timedelta(seconds=61)
    counts = sweeper.sweep(at, POLICY, outbox, send, time_left)
    # Sends start while at least 12 s are left: at 60, 57, ... 12 s left, 17 of them.
    assert dict(counts) == {"unsent": 17, "deferred": 13}
    assert time_left() >= 60 - 17 * 3 > 0

    queue.down = False
    send, time_left = hanging_sends(store, queue, 0, per_send=0.0)
    assert dict(sweeper.sweep(at, POLICY, outbox, send, time_left)) == {"redelivered": 30}
    assert len(queue.sent(QUEUE)) == 30


def test_with_time_enough_nothing_is_deferred(store, outbox, queue):
    send, time_left = hanging_sends(store, queue, 9, per_send=0.1)
    at = REQUESTED + timedelta(seconds=61)
    assert dict(sweeper.sweep(at, POLICY, outbox, send, time_left)) == {"redelivered": 10}


def test_a_deferral_is_counted_in_a_metric_and_said_in_a_warning(store, outbox, queue, monkeypatch):
    said, counted = [], []
    monkeypatch.setattr(
        sweeper.logger, "warning", lambda message, extra: said.append((message, extra))
    )
    monkeypatch.setattr(sweeper.metrics, "add_metric", lambda **metric: counted.append(metric))
    send, _ = hanging_sends(store, queue, 2)
    at = REQUESTED + timedelta(seconds=61)
    assert dict(sweeper.sweep(at, POLICY, outbox, send, lambda: 11.9)) == {"deferred": 3}
    assert said == [("sweep out of time; the rest wait for the next pass", {"deferred": 3})]
    assert counted == [{"name": "TerminationsDeferred", "unit": MetricUnit.Count, "value": 3}]
    said.clear()
    sweeper.sweep(at, POLICY, outbox, send, lambda: 12.0)  # 12 s left: time enough
    assert said == []


def failed(store, at_seconds: float) -> None:
    """vm-term's node reports ``failed`` (it is alive, the workload not stopped yet)."""
    report = TerminationReport(
        termination_id="t-old",
        node_id="node-a",
        workload_id="vm-term",
        outcome="failed",
        reported_at=REQUESTED,
    )
    assert apply_report(report, REQUESTED + timedelta(seconds=at_seconds), store, store) == "failed"


def test_a_node_that_reports_failed_after_every_delivery_is_never_flagged_stuck(
    store, outbox, queue
):
    at = 61
    for _ in range(4 * POLICY.max_deliveries):
        assert sweep(outbox, queue, at) == {"redelivered": 1}
        failed(store, at + 5)
        at += 600
    assert vm_term(store).termination.stuck_at is None
    assert vm_term(store).termination.deliveries == 12  # every send counted all the same
    assert queue.deduplication_ids[-2:] == ["t-old#r10", "t-old#r11"]


def test_a_node_silent_after_a_failed_report_is_flagged_after_max_deliveries_more(
    store, outbox, queue
):
    at = 61
    for _ in range(2):
        assert sweep(outbox, queue, at) == {"redelivered": 1}
        at += 600
    failed(store, at - 300)
    for _ in range(POLICY.max_deliveries):  # 5 deliveries in all: past max, not since
        assert sweep(outbox, queue, at) == {"redelivered": 1}
        at += 600
    assert sweep(outbox, queue, at) == {"gave_up": 1}
    assert vm_term(store).termination.stuck_at is not None


def until_stuck(outbox, queue) -> float:
    at = 61
    for _ in range(POLICY.max_deliveries):
        assert sweep(outbox, queue, at) == {"redelivered": 1}
        at += 600
    assert sweep(outbox, queue, at) == {"gave_up": 1}
    return at


def test_a_failed_report_on_a_stuck_one_opens_it_again_at_the_normal_pace(store, outbox, queue):
    at = until_stuck(outbox, queue)
    failed(store, at + 60)
    assert vm_term(store).termination.stuck_at is None
    assert [t.workload.id for t in outbox.listed(TerminationState.OPEN)] == ["vm-term"]
    assert list(outbox.listed(TerminationState.STUCK)) == []
    # The last send was 600 s before the give-up: the confirm deadline, not the stuck pace.
    assert sweep(outbox, queue, at + 120) == {"redelivered": 1}
    # Silent again: flagged once more after max_deliveries unanswered ones.
    at += 120 + 600
    for _ in range(POLICY.max_deliveries - 1):
        assert sweep(outbox, queue, at) == {"redelivered": 1}
        at += 600
    assert sweep(outbox, queue, at) == {"gave_up": 1}


def test_a_report_between_the_sweepers_read_and_its_flag_keeps_it_open(store, outbox, queue):
    for n in range(POLICY.max_deliveries):
        sweep(outbox, queue, 61 + 600 * n)
    at = 61 + 600 * POLICY.max_deliveries

    class AnsweredMeanwhile(FakeTable):
        def read(self, node_id, workload_id):
            read = super().read(node_id, workload_id)
            failed(store, at)  # the node answers just after the re-read
            return read

    assert sweep(AnsweredMeanwhile.sharing(store), queue, at) == {"changed": 1}
    assert vm_term(store).termination.stuck_at is None


def test_the_reclaims_send_and_the_sweepers_carry_the_same_requested_at(store, queue, clock):
    clock.now = NOW + timedelta(microseconds=654321)  # a real clock is never on the second
    raw = RawBody(json.dumps({"unitIds": [UNITS[0]]}))
    assert reclaim(BROKER, "node-a", "res-1", raw, None, ports(store, clock, queue)).status == 200
    [own] = queue.sent(QUEUE)
    sweeper.sweep(clock.now + POLICY.grace, POLICY, store, queue.send)
    [again] = [m for m in queue.sent(QUEUE)[1:] if m.workload_id == "vm-spot"]
    # The commit's time to the millisecond (the contract's precision), the same on both.
    assert own.requested_at == again.requested_at == NOW + timedelta(milliseconds=654)
    assert own.terminate_at == again.terminate_at == own.requested_at  # no notice
    assert json.loads(own.to_json()) == json.loads(again.to_json())


def terminating(workload_id: str, requested_ago: timedelta | None, **termination: object):
    requested = None if requested_ago is None else NOW - requested_ago
    return workload(
        workload_id,
        (UNITS[3],),
        state=WorkloadState.TERMINATING,
        termination=Termination(f"t-{workload_id}", "res-1", requested_at=requested, **termination),
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
            deliveries=POLICY.max_deliveries,
            last_delivered_at=long_ago,
        ),
        terminating(
            "vm-stuck",
            timedelta(hours=9),
            deliveries=POLICY.max_deliveries,
            last_delivered_at=long_ago,
            stuck_at=long_ago,
        ),
    )
    del store.nodes["node-a"].workloads["vm-term"]
    counts = sweeper.sweep(NOW, POLICY, store, queue.send)
    assert dict(counts) == {"gave_up": 1, "redelivered": 1}
    assert [m.workload_id for m in queue.sent(QUEUE)] == ["vm-stuck"]


def test_giving_up_emits_the_metric_the_stack_alarms_on(store, queue, emitted):
    alarmed = {alarm["MetricName"] for alarm in template.of_type("AWS::CloudWatch::Alarm").values()}
    add(
        store,
        terminating(
            "vm-tired",
            timedelta(hours=4),
            deliveries=POLICY.max_deliveries,
            last_delivered_at=NOW - timedelta(hours=1),
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


def _delivered_to_the_limit(store, queue):
    tired = replace(
        vm_term(store),
        termination=replace(
            vm_term(store).termination,
            deliveries=POLICY.max_deliveries,
            last_delivered_at=REQUESTED,
        ),
    )
    store.nodes["node-a"].workloads["vm-term"] = tired


# Each outcome of a sweep of one termination: the line an operator reads, its level, and the
# metric the dashboards (and, for giving up, the alarm) count.
SIGNALS = {
    "redelivered": (lambda store, queue: None, "INFO", "termination redelivered",
                    "TerminationsRedelivered", 0),
    "waiting_for_queue": (lambda store, queue: queue.missing.add(QUEUE), "WARNING",
                          "termination waits for the node's queue",
                          "TerminationsWaitingForQueue", 0),
    "unsent": (lambda store, queue: setattr(queue, "down", True), "ERROR",
               "termination could not be sent; the next sweep tries again",
               "TerminationSendsFailed", 0),
    "gave_up": (_delivered_to_the_limit, "ERROR", "termination delivered without a report: stuck",
                "SweeperGiveUps", POLICY.max_deliveries),
}  # fmt: skip


@pytest.mark.parametrize("outcome", list(SIGNALS))
def test_each_outcome_is_said_at_its_level_naming_the_termination_and_counted(
    outcome, store, outbox, queue, emitted, caplog
):
    arrange, level, message, metric, deliveries = SIGNALS[outcome]
    arrange(store, queue)
    caplog.set_level("DEBUG", logger="reservations")
    assert sweep(outbox, queue, 3 * 3600) == {outcome: 1}
    [said] = [r for r in caplog.records if r.getMessage() == message]
    assert said.levelname == level
    named = (said.terminationId, said.nodeId, said.workloadId, said.deliveries)
    assert named == ("t-old", "node-a", "vm-term", deliveries)
    assert emitted[metric]["Value"] == [1.0]
    assert emitted[metric]["Unit"] == "Count"


def test_a_stuck_termination_of_a_node_without_an_owner_names_no_owner():
    terminating = workload(
        "vm-term",
        (UNITS[4],),
        state=WorkloadState.TERMINATING,
        termination=Termination(id="t-old", deliveries=3),
    )
    stuck = sweeper.stuck_event(OpenTermination("node-a", terminating), None, NOW)
    assert stuck.owner_org_id == ""
    assert stuck.audience_org_ids == frozenset()
    assert stuck.event.data["deliveries"] == 3
    owned = sweeper.stuck_event(OpenTermination("node-a", terminating), "org-acme", NOW)
    assert owned.owner_org_id == "org-acme"
    assert owned.id == stuck.id  # the change id is the termination's and its deliveries


def test_a_termination_stored_without_its_reservation_is_sent_naming_none():
    stored = workload("vm-old", (UNITS[0],), state=WorkloadState.TERMINATING,
                      termination=Termination(id="t-old", requested_at=NOW))  # fmt: skip
    sent = message(OpenTermination("node-a", stored), NOW + timedelta(minutes=5))
    assert (sent.termination_id, sent.reservation_id, sent.requested_at) == ("t-old", "", NOW)
