"""A reclaim's notice on the node: each driver stops the workload at the message's
``terminateAt`` (libvirt: ACPI a grace before it, destroy at it; Kubernetes: delete at once
with the seconds left as the pod's grace; the command: run a grace before it), the grace
clamped to the notice; and the consumer waits for a message's start in a thread of its own,
so that a long notice never holds up the other messages, and a moved deadline is kept."""

from __future__ import annotations

import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from node_agent.consumer import STOP_ALLOWANCE_SECONDS, Consumer
from node_agent.drivers import Clock, CommandDriver, LogDriver, Result, lead_seconds
from node_agent.libvirt_driver import LibvirtDriver
from termination_messages import SpotTermination
from tests.agent.support import FakeClock

pytestmark = pytest.mark.moto

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def noticed(
    workload_id: str = "vm-1",
    kind: str = "vm",
    notice: float | None = 0,
    requested: datetime = T0,
    termination_id: str | None = None,
) -> SpotTermination:
    """A message requested at ``requested`` with ``notice`` seconds (None: no terminateAt,
    as an older sender wrote it)."""
    body: dict[str, Any] = {
        "terminationId": termination_id or f"t-{uuid.uuid4()}",
        "nodeId": "node-a",
        "workloadId": workload_id,
        "workloadKind": kind,
        "unitIds": ["0000:04:00.0"],
        "reservationId": "res-1",
        "requestedAt": requested.isoformat(),
    }
    if notice is not None:
        body["terminateAt"] = (requested + timedelta(seconds=notice)).isoformat()
    # As the agent reads it off the wire (its times to the millisecond).
    return SpotTermination.model_validate_json(SpotTermination.model_validate(body).to_json())


def wall(fake: FakeClock, start: datetime) -> Clock:
    """The fake clock as a wall clock too: ``start`` when it reads 1000."""
    return Clock(
        monotonic=fake.monotonic,
        sleep=fake.sleep,
        now=lambda: start + timedelta(seconds=fake.now - 1000.0),
    )


# --- the drivers ---------------------------------------------------------------------------


def test_the_grace_is_clamped_to_the_notice_and_none_without_one(hypervisor):
    libvirt = LibvirtDriver(hypervisor.uri, grace_seconds=30)
    assert lead_seconds(libvirt, noticed(notice=300)) == 30
    assert lead_seconds(libvirt, noticed(notice=10)) == 10
    assert lead_seconds(libvirt, noticed(notice=0)) == 0
    assert lead_seconds(libvirt, noticed(notice=None)) == 30  # an older sender: as before
    assert lead_seconds(LogDriver(), noticed(notice=300)) == 0  # it stops at terminateAt


def test_libvirt_asks_acpi_a_grace_before_terminate_at_and_destroys_at_it(hypervisor):
    name = hypervisor.running(on_poweroff="restart")  # a guest that ignores ACPI
    seen: list[int] = []
    fake = FakeClock(on_sleep=lambda: seen.append(hypervisor.state(name)[0]))
    message = noticed(name, notice=120)
    # The consumer calls stop when the lead starts: 30 s before terminateAt.
    clock = wall(fake, T0 + timedelta(seconds=90))
    result = LibvirtDriver(hypervisor.uri, grace_seconds=30, clock=clock).stop(message)
    assert (result.outcome, result.detail) == (
        "terminated",
        f"domain {name} destroyed at terminateAt {message.deadline.isoformat()}",
    )
    assert sum(fake.slept) == 30  # until terminateAt, not a moment more
    assert set(seen) == {hypervisor.libvirt.VIR_DOMAIN_RUNNING}  # running until then
    assert hypervisor.state(name)[0] != hypervisor.libvirt.VIR_DOMAIN_RUNNING


def test_libvirt_without_a_notice_destroys_at_once_whatever_the_grace(hypervisor):
    name = hypervisor.running()  # a guest that would honour ACPI: never asked
    fake = FakeClock()
    clock = wall(fake, T0 + timedelta(milliseconds=400))  # the message came a bit later
    result = LibvirtDriver(hypervisor.uri, grace_seconds=30, clock=clock).stop(
        noticed(name, notice=0)
    )
    assert (result.outcome, result.detail) == ("terminated", f"domain {name} destroyed")
    assert fake.slept == []


def test_libvirt_a_guest_that_honours_acpi_stops_before_terminate_at(hypervisor):
    name = hypervisor.running()
    fake = FakeClock()
    clock = wall(fake, T0 + timedelta(seconds=50))
    result = LibvirtDriver(hypervisor.uri, grace_seconds=30, clock=clock).stop(
        noticed(name, notice=60)
    )
    assert (result.outcome, result.detail) == ("terminated", f"domain {name} shut down within 10 s")


def test_the_command_gets_the_grace_left_before_terminate_at():
    command = "kubectl delete pod {workloadId} --grace-period={graceSeconds}"
    at_start = wall(FakeClock(), T0 + timedelta(seconds=90))
    driver = CommandDriver(command, grace_seconds=30, clock=at_start)
    assert lead_seconds(driver, noticed(notice=120)) == 30
    assert driver.argv(noticed(notice=120))[-1] == "--grace-period=30"
    late = CommandDriver(
        command, grace_seconds=30, clock=wall(FakeClock(), T0 + timedelta(seconds=115))
    )
    assert late.argv(noticed(notice=120))[-1] == "--grace-period=5"
    assert late.argv(noticed(notice=0))[-1] == "--grace-period=0"
    assert late.argv(noticed(notice=None))[-1] == "--grace-period=30"  # an older sender


# --- the consumer --------------------------------------------------------------------------


class Recording:
    """A driver that notes when (wall clock) it was asked to stop what."""

    name = "recording"

    def __init__(self) -> None:
        self.stopped: list[tuple[str, datetime]] = []
        self.lock = threading.Lock()

    def stop(self, termination: SpotTermination) -> Result:
        with self.lock:
            self.stopped.append((termination.workload_id, datetime.now(UTC)))
        return Result("terminated", "recorded")


def consumer(queues: Any, driver: Any) -> Consumer:
    return Consumer(queues.sqs, "node-a", queues.node, queues.reports, driver, wait_seconds=0)


def send(queues: Any, message: SpotTermination, dedup: str | None = None, group: str = "") -> None:
    queues.sqs.send_message(
        QueueUrl=queues.node,
        MessageBody=message.to_json(),
        MessageGroupId=group or message.workload_id,
        MessageDeduplicationId=dedup or message.termination_id,
    )


def queued(queues: Any) -> int:
    attributes = queues.sqs.get_queue_attributes(
        QueueUrl=queues.node,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(
        attributes["ApproximateNumberOfMessagesNotVisible"]
    )


def test_a_long_notice_waits_in_its_own_thread_and_the_others_go_on(queues):
    driver = Recording()
    agent = consumer(queues, driver)
    now = datetime.now(UTC)
    long_one = noticed("vm-long", notice=3600, requested=now)
    send(queues, long_one)
    assert agent.poll_once() == 1
    assert driver.stopped == []  # not before its terminateAt
    assert list(agent.waiting) == [long_one.termination_id]
    send(queues, noticed("vm-now", notice=0, requested=now))
    assert agent.poll_once() == 1  # the held one is not shown again meanwhile
    assert [w for w, _ in driver.stopped] == ["vm-now"]  # handled while the other waits
    assert [r["workloadId"] for r in queues.sent_reports()] == ["vm-now"]
    assert agent.poll_once() == 0
    agent.stop()  # the waiting message goes back to the queue for the next agent, at once
    agent.join_waiting(timeout=10)
    again = consumer(queues, driver)
    assert again.poll_once() == 1
    assert list(again.waiting) == [long_one.termination_id]
    again.stop()
    again.join_waiting(timeout=10)


def test_a_noticed_message_is_stopped_at_its_terminate_at_then_reported_and_deleted(queues):
    driver = Recording()
    agent = consumer(queues, driver)
    message = noticed("vm-1", notice=1.5, requested=datetime.now(UTC))
    send(queues, message)
    agent.poll_once()
    agent.join_waiting(timeout=30)
    [(workload, at)] = driver.stopped
    assert workload == "vm-1"
    assert at >= message.deadline  # never before
    [report] = queues.sent_reports()
    assert (report["workloadId"], report["outcome"]) == ("vm-1", "terminated")
    assert datetime.fromisoformat(report["reportedAt"]) >= message.deadline
    assert queued(queues) == 0  # deleted
    assert message.termination_id in agent.done


def test_an_earlier_deadline_for_a_waiting_termination_is_kept_and_both_are_deleted(queues):
    driver = Recording()
    agent = consumer(queues, driver)
    now = datetime.now(UTC)
    tid = f"t-{uuid.uuid4()}"
    first = noticed("vm-1", notice=3600, requested=now, termination_id=tid)
    moved = noticed("vm-1", notice=1, requested=now, termination_id=tid)
    send(queues, first)
    agent.poll_once()
    # The API's resend: same termination, its own de-duplication id and message group.
    send(queues, moved, dedup=f"{tid}#d1", group=f"vm-1#{tid}#d1")
    assert agent.poll_once() == 1
    agent.join_waiting(timeout=30)
    [(workload, at)] = driver.stopped  # once, at the earlier deadline
    assert (workload, at >= moved.deadline, at < first.deadline) == ("vm-1", True, True)
    assert len(queues.sent_reports()) == 1
    assert queued(queues) == 0  # both messages deleted


def test_a_later_deadline_for_a_waiting_termination_changes_nothing(queues):
    driver = Recording()
    agent = consumer(queues, driver)
    now = datetime.now(UTC)
    tid = f"t-{uuid.uuid4()}"
    send(queues, noticed("vm-1", notice=1, requested=now, termination_id=tid))
    agent.poll_once()
    later = noticed("vm-1", notice=3600, requested=now, termination_id=tid)
    send(queues, later, dedup=f"{tid}#late", group="other")
    agent.poll_once()
    agent.join_waiting(timeout=30)
    [(_, at)] = driver.stopped
    assert at < later.deadline
    assert queued(queues) == 0


def test_a_waiting_message_is_held_until_its_deadline_and_the_stops_allowance(queues):
    calls: list[dict[str, Any]] = []
    real = queues.sqs.change_message_visibility

    def change(**request: Any) -> Any:
        calls.append(request)
        return real(**request)

    queues.sqs.change_message_visibility = change
    agent = consumer(queues, Recording())
    send(queues, noticed("vm-1", notice=600, requested=datetime.now(UTC)))
    agent.poll_once()
    [held] = calls
    assert 600 <= held["VisibilityTimeout"] <= 600 + STOP_ALLOWANCE_SECONDS + 1
    assert held["VisibilityTimeout"] >= 600 + STOP_ALLOWANCE_SECONDS - 5
    agent.stop()
    agent.join_waiting(timeout=10)
    assert calls[-1]["VisibilityTimeout"] == 0  # given back at once on a stop


def test_without_terminate_at_a_message_is_handled_in_the_loop_as_before(queues):
    driver = Recording()
    agent = consumer(queues, driver)
    send(queues, noticed("vm-1", notice=None, requested=datetime.now(UTC) + timedelta(hours=1)))
    agent.poll_once()
    assert [w for w, _ in driver.stopped] == ["vm-1"]  # no terminateAt: now
    assert agent.waiting == {}
    time.sleep(0)  # nothing left in a thread


class Deleting(Recording):
    """A driver that starts at once and whose stop lasts until the deadline, as the
    Kubernetes driver's wait for the pod to go does."""

    name = "deleting"

    def lead_seconds(self, termination: SpotTermination) -> float:
        return termination.notice_seconds

    def stop(self, termination: SpotTermination) -> Result:
        result = super().stop(termination)
        time.sleep(max((termination.deadline - datetime.now(UTC)).total_seconds(), 0))
        return result


class Held(Deleting):
    """A :class:`Deleting` driver whose stop of ``held`` lasts until the test releases it,
    not until a wall-clock moment: on a loaded machine the agent may take longer than the
    notice to handle the next message, and the stop must still be running then."""

    def __init__(self, held: str) -> None:
        super().__init__()
        self.held = held
        self.started = threading.Event()
        self.released = threading.Event()

    def stop(self, termination: SpotTermination) -> Result:
        if termination.workload_id != self.held:
            return super().stop(termination)
        result = Recording.stop(self, termination)
        self.started.set()
        # Bounded so that a failing test cannot leave it waiting for ever (a daemon thread).
        self.released.wait(timeout=60)
        return result


def test_a_stop_that_lasts_the_notice_runs_in_its_own_thread_too(queues):
    driver = Held("pod-long")
    agent = consumer(queues, driver)
    now = datetime.now(UTC)
    send(queues, noticed("pod-long", kind="pod", notice=2, requested=now))
    agent.poll_once()  # its stop starts at once, in its thread, and lasts until released
    # Started, not merely scheduled: on a loaded machine its thread may run only after the
    # next poll, and the order of the stops below would be the scheduler's, not the agent's.
    assert driver.started.wait(timeout=30)
    send(queues, noticed("pod-now", kind="pod", notice=0, requested=now))
    agent.poll_once()
    reported = [r["workloadId"] for r in queues.sent_reports()]
    assert reported == ["pod-now"]  # while pod-long's stop still runs
    driver.released.set()
    agent.join_waiting(timeout=30)
    assert [w for w, _ in driver.stopped] == ["pod-long", "pod-now"]
    assert [r["workloadId"] for r in queues.sent_reports()] == ["pod-long"]
