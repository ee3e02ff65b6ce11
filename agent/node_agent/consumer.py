"""The consumer loop: receive from the node's own queue, stop, report, then delete.

A message is deleted only after its work succeeded and was reported; anything else is left
to the queue's visibility timeout and redrive policy (after maxReceiveCount it lands in the
dead-letter queue). Work is idempotent on the termination id: a redelivered termination
already done is reported again (harmless) and deleted without stopping anything twice.

A message with a notice (its ``terminateAt`` still ahead) never holds up the loop: it waits
for its driver's start (``terminateAt`` minus the driver's ``lead_seconds``: at once for a
pod, whose stop lasts the notice) and is stopped in a thread of its own. Its visibility is
set once, at receipt, to last until its deadline plus ``STOP_ALLOWANCE_SECONDS`` (so SQS
neither shows it again meanwhile nor counts it towards maxReceiveCount), and the loop goes
on receiving. The thread stops, reports and deletes it as the loop does any other. A
message of the same termination that comes meanwhile (a later reclaim moved the deadline
earlier: its own message group) joins the one waiting: the earlier deadline wins, and both
are deleted at the end. When the agent is stopped, the messages still waiting for their
start are made visible again at once for the next agent.
A message without a notice is handled in the loop, as before notices existed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from node_agent.drivers import (
    Driver,
    Drivers,
    Result,
    lead_seconds,
    name_of,
    seconds_left,
    unhandled,
)
from node_agent.metrics import AgentMetrics
from termination_messages import SpotTermination, TerminationReport

log = logging.getLogger("node_agent")

Checkpoint = Callable[[str], None]

# How long after its deadline a waiting message stays invisible: time for the stop itself
# (Kubernetes' settle, libvirt's destroy, a command's timeout) and its report.
STOP_ALLOWANCE_SECONDS = 120
# SQS's longest visibility timeout (12 hours); a notice is at most an hour.
MAX_VISIBILITY_SECONDS = 12 * 3600


def _utc_now() -> datetime:
    return datetime.now(UTC)


class Waiting:
    """A termination waiting for its start in its own thread, and the messages it came in."""

    def __init__(self, termination: SpotTermination, message: dict[str, Any]) -> None:
        self.termination = termination
        self.messages = [message]
        self.wake = threading.Event()
        self.started = False
        self.thread: threading.Thread | None = None

    def join(self, termination: SpotTermination, message: dict[str, Any]) -> bool:
        """Another message of the same termination: kept to be deleted with it; its deadline
        taken when earlier (and the waiting thread woken to see it). Whether it moved."""
        self.messages.append(message)
        ours, theirs = self.termination.deadline, termination.deadline
        if theirs >= ours or self.started:
            return False
        self.termination = termination
        self.wake.set()
        return True


class DoneLog:
    """Termination ids whose work finished; kept in a file when one is given."""

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._ids: set[str] = set()
        if path is not None and path.exists():
            self._ids = set(path.read_text().split())

    def __contains__(self, termination_id: str) -> bool:
        return termination_id in self._ids

    def add(self, termination_id: str) -> None:
        self._ids.add(termination_id)
        if self._path is not None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            with self._path.open("a") as log_file:
                log_file.write(termination_id + "\n")


class Consumer:
    def __init__(
        self,
        sqs: Any,
        node_id: str,
        queue_url: str,
        reports_queue_url: str,
        driver: Driver,
        done: DoneLog | None = None,
        wait_seconds: int = 20,
        visibility_timeout: int | None = None,
        checkpoint: Checkpoint = lambda _step: None,
        metrics: AgentMetrics | None = None,
        tick: Callable[[], None] = lambda: None,
        retry_seconds: float = 5.0,
        now: Callable[[], datetime] = _utc_now,
    ) -> None:
        self.sqs = sqs
        self.node_id = node_id
        self.queue_url = queue_url
        self.reports_queue_url = reports_queue_url
        self.drivers = driver if isinstance(driver, Drivers) else Drivers([driver])
        self.done = done or DoneLog()
        self.wait_seconds = wait_seconds
        self.visibility_timeout = visibility_timeout
        self.checkpoint = checkpoint
        self.metrics = metrics or AgentMetrics()
        self.tick = tick  # after every round, received or not: the watchdog, the textfile
        self.retry_seconds = retry_seconds
        self.stopping = threading.Event()
        self.counts: Counter[str] = Counter()
        self.now = now
        self.waiting: dict[str, Waiting] = {}
        self._lock = threading.Lock()

    def run(self) -> None:
        """Until :meth:`stop`: the message in hand is always finished first. An AWS error is
        logged, counted and waited out (the message, if any, comes back by itself)."""
        while not self.stopping.is_set():
            try:
                self.poll_once()
            except Exception:
                log.exception("round failed; trying again in %g s", self.retry_seconds)
                self.stopping.wait(self.retry_seconds)
            self.tick()
        log.info("consumer stopped: %s", dict(self.counts))

    def stop(self) -> None:
        self.stopping.set()
        with self._lock:
            for job in self.waiting.values():
                job.wake.set()

    def join_waiting(self, timeout: float | None = None) -> None:
        """Until every termination waiting for its deadline is done (or ``timeout``)."""
        with self._lock:
            threads = [job.thread for job in self.waiting.values() if job.thread is not None]
        for thread in threads:
            thread.join(timeout)

    def poll_once(self) -> int:
        request: dict[str, Any] = {
            "QueueUrl": self.queue_url,
            "MaxNumberOfMessages": 1,
            "WaitTimeSeconds": self.wait_seconds,
            "MessageSystemAttributeNames": ["ApproximateReceiveCount"],
        }
        if self.visibility_timeout is not None:
            request["VisibilityTimeout"] = self.visibility_timeout
        with _failures_counted(self.metrics, "receive"):
            messages = self.sqs.receive_message(**request).get("Messages", [])
        self.metrics.last_poll.set_to_current_time()
        self.metrics.received.inc(len(messages))
        for message in messages:
            self.handle(message)
        return len(messages)

    def handle(self, message: dict[str, Any]) -> None:
        termination = self._parse(message)
        if termination is None:
            return
        tid = termination.termination_id
        with self._lock:
            waiting = self.waiting.get(tid)
            if waiting is not None:
                moved = waiting.join(termination, message)
            elif tid not in self.done and seconds_left(termination, self.now()) > 0:
                waiting = self.waiting[tid] = Waiting(termination, message)
                moved = False
                self._wait_in_thread(waiting)
            else:
                moved = None
        if waiting is None:
            self.finish(termination, [message])
            return
        self._hold(termination, message)
        if moved:
            log.info("%s: deadline moved to %s", tid, termination.deadline.isoformat())

    def _starts_in(self, termination: SpotTermination) -> float:
        """Seconds until the driver of its kind must start (0: now)."""
        driver = self.drivers.for_kind(termination.workload_kind)
        left = seconds_left(termination, self.now())
        return max(left - lead_seconds(driver, termination), 0.0) if driver else 0.0

    def _hold(self, termination: SpotTermination, message: dict[str, Any]) -> None:
        """Keep a waiting message invisible until its deadline and the stop's allowance."""
        seconds = math.ceil(seconds_left(termination, self.now())) + STOP_ALLOWANCE_SECONDS
        with _failures_counted(self.metrics, "visibility"):
            self.sqs.change_message_visibility(
                QueueUrl=self.queue_url,
                ReceiptHandle=message["ReceiptHandle"],
                VisibilityTimeout=min(seconds, MAX_VISIBILITY_SECONDS),
            )

    def _wait_in_thread(self, waiting: Waiting) -> None:
        name = f"notice[{waiting.termination.workload_id}]"
        waiting.thread = threading.Thread(
            target=self._wait_then_finish, args=(waiting,), name=name, daemon=True
        )
        waiting.thread.start()

    def _wait_then_finish(self, waiting: Waiting) -> None:
        """Sleep until the driver's start (woken early by a moved deadline or a stop), then
        finish; on a stop, leave the messages to the next agent, visible at once."""
        tid = waiting.termination.termination_id
        try:
            while True:
                with self._lock:  # a wake (a stop, a moved deadline) is set under it too
                    waiting.wake.clear()
                    if self.stopping.is_set():
                        break
                    left = self._starts_in(waiting.termination)
                    if left <= 0:
                        waiting.started = True
                        break
                waiting.wake.wait(left)
            if not waiting.started:
                self._release(waiting.messages)
                return
            self.finish(waiting.termination, waiting.messages)
        except Exception:
            log.exception("termination %s failed while waiting; it comes back by itself", tid)
        finally:
            with self._lock:
                self.waiting.pop(tid, None)

    def _release(self, messages: list[dict[str, Any]]) -> None:
        for message in messages:
            with contextlib.suppress(Exception):  # then it comes back at its deadline
                self.sqs.change_message_visibility(
                    QueueUrl=self.queue_url,
                    ReceiptHandle=message["ReceiptHandle"],
                    VisibilityTimeout=0,
                )

    def finish(self, termination: SpotTermination, messages: list[dict[str, Any]]) -> None:
        """Stop it (unless done before), report, and delete its messages."""
        tid = termination.termination_id
        if tid in self.done:
            self._count("duplicate")
            result = Result("gone", "already done by this node")
        else:
            result = self._stop(termination)
        self.checkpoint("stopped")
        with _failures_counted(self.metrics, "report"):
            self._report(termination, result)
        self.checkpoint("reported")
        if result.outcome == "failed":
            # Not deleted: it comes back after the visibility timeout, and after
            # maxReceiveCount it goes to the dead-letter queue.
            self._count("failed")
            self.metrics.failures.labels("stop").inc()
            log.warning("could not stop %s: %s", termination.workload_id, result.detail)
            return
        with self._lock:
            self.done.add(tid)
        self.checkpoint("recorded")
        for message in messages:
            with _failures_counted(self.metrics, "delete"):
                self.sqs.delete_message(
                    QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"]
                )
        self._count(result.outcome)
        log.info("%s %s (%s)", result.outcome, termination.workload_id, tid)

    def _stop(self, termination: SpotTermination) -> Result:
        """The driver for its kind stops it, timed; a driver that raises has stopped nothing."""
        driver = self.drivers.for_kind(termination.workload_kind)
        if driver is None:
            return unhandled(termination)
        started = time.monotonic()
        try:
            result = driver.stop(termination)
        except Exception as error:
            log.exception("driver %s raised", name_of(driver))
            result = Result("failed", f"{name_of(driver)} driver: {type(error).__name__}: {error}")
        self.metrics.stop_seconds.labels(name_of(driver)).observe(time.monotonic() - started)
        return result

    def _count(self, outcome: str) -> None:
        with self._lock:
            self.counts[outcome] += 1
        self.metrics.outcomes.labels(outcome).inc()

    def _parse(self, message: dict[str, Any]) -> SpotTermination | None:
        """The termination, or None for a message this node must refuse."""
        try:
            termination = SpotTermination.model_validate(json.loads(message["Body"]))
        except (ValueError, ValidationError):
            self._refuse(message, "poison")
            return None
        if termination.node_id != self.node_id:
            self._refuse(message, "foreign")
            return None
        return termination

    def _refuse(self, message: dict[str, Any], why: str) -> None:
        """Never act on it; make it visible again at once so the redrive policy moves it to
        the dead-letter queue after maxReceiveCount receives."""
        self._count(why)
        log.error("refused a %s message %s", why, message.get("MessageId"))
        self.sqs.change_message_visibility(
            QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
        )

    def _report(self, termination: SpotTermination, result: Result) -> None:
        report = TerminationReport(
            termination_id=termination.termination_id,
            node_id=self.node_id,
            workload_id=termination.workload_id,
            outcome=result.outcome,
            detail=(result.detail or "")[:1000] or None,
            reported_at=datetime.now(UTC),
        )
        self.sqs.send_message(QueueUrl=self.reports_queue_url, MessageBody=report.to_json())


@contextmanager
def _failures_counted(metrics: AgentMetrics, stage: str) -> Iterator[None]:
    """Counts an exception leaving the block as a failure of ``stage``, and lets it go on."""
    try:
        yield
    except Exception:
        metrics.failures.labels(stage).inc()
        raise
