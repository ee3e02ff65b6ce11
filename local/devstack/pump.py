"""What AWS would do around the non-HTTP functions, for the local stack.

Long-polls the termination reports queue and the webhook delivery queue and hands each
batch to TerminationReportsFunction and WebhookSenderFunction through ``sam local
start-lambda`` (the real functions in their containers; the sender's own start-lambda, on
the host's network, when ``--sender-endpoint`` names it), deleting only the records a
partial-batch response did not list (the sender holds those until their next attempt);
polls the table's stream for the event relay (``streams.py``); and runs SweeperFunction,
EventBacklogFunction and HistoryMoverFunction on a period, and ClockFunction at a rate of
one pass every 10 s (the contract's local clock period: a pass starts every 10 s, however
long the last one took, as a schedule's ``rate()`` invokes it).

    python -m devstack.pump --lambda-endpoint http://127.0.0.1:3001 --emulator URL \
        [--sender-endpoint http://127.0.0.1:3002]
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from types import FrameType
from typing import Any, TypeVar

import boto3
from botocore.config import Config

from devstack.emulator import REGION
from devstack.net import wait_for_port
from devstack.sqs_events import failed_message_ids, schedule_event, sqs_event
from devstack.stopping import exit_now
from devstack.streams import stream_pumps
from reservations.terminations.models import TerminationReport

log = logging.getLogger("pump")
REPORTS_QUEUE = "TerminationReportsQueue"
DELIVERY_QUEUE = "WebhookDeliveryQueue"
# How often the table's stream is read: new events reach the bus well within 2 s.
STREAM_POLL_SECONDS = 0.25


# The local stack's clock period (the contract: clock events every 10 s locally).
CLOCK_SECONDS = 10.0
# How long the pump waits before it reads again what it reads before its loops start.
SETUP_RETRY_SECONDS = 1.0
T = TypeVar("T")


def invoke(lambda_client: Any, function: str, event: dict[str, Any]) -> dict[str, Any]:
    response = lambda_client.invoke(FunctionName=function, Payload=json.dumps(event).encode())
    payload = json.loads(response["Payload"].read() or b"{}")
    if response.get("FunctionError"):
        raise RuntimeError(f"{function} failed: {payload}")
    return payload if isinstance(payload, dict) else {}


def invoke_batch(lambda_client: Any, function: str, event: dict[str, Any]) -> set[str]:
    """A batch function's partial-batch answer: the records it asks to be retried. Every batch
    function answers ``batchItemFailures``, empty when all went well; an answer without it
    is a failed invocation, the whole batch retried, as AWS retries it: ``sam local
    start-lambda`` passes an unhandled error on as a payload without ``FunctionError``, and
    one cut short as an empty answer (taken as success, the batch was deleted and its
    webhook deliveries never attempted)."""
    payload = invoke(lambda_client, function, event)
    if not isinstance(payload.get("batchItemFailures"), list):
        raise RuntimeError(f"{function} answered no batchItemFailures: {str(payload)[:300]}")
    return failed_message_ids(payload)


def pump_reports(sqs: Any, lambda_client: Any, queue_url: str, queue_arn: str, wait: int) -> int:
    """One batch of termination reports to their function."""
    return pump_queue(
        sqs, lambda_client, "TerminationReportsFunction", (queue_url, queue_arn), wait
    )


def pump_queue(
    sqs: Any, lambda_client: Any, function: str, queue: tuple[str, str], wait: int
) -> int:
    """One batch of the queue (its URL and ARN) to ``function``, as the event source mapping
    hands it (partial batch failures): the messages it did not list are deleted; how many."""
    queue_url, queue_arn = queue
    messages = sqs.receive_message(
        QueueUrl=queue_url,
        MaxNumberOfMessages=10,
        WaitTimeSeconds=wait,
        MessageSystemAttributeNames=["ApproximateReceiveCount"],
    ).get("Messages", [])
    if not messages:
        return 0
    try:
        failed = invoke_batch(lambda_client, function, sqs_event(messages, queue_arn))
    except Exception:  # a failed invocation retries the whole batch, as AWS would
        log.exception("%s failed; the batch will be retried", function)
        return 0
    for message in messages:
        if message["MessageId"] not in failed:
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    return len(messages) - len(failed)


def warm_up_event(queue_arn: str) -> dict[str, Any]:
    """A batch of one report for no open termination: the function starts its container and
    drops the report as it drops any such report (a warning, nothing written)."""
    report = TerminationReport(
        terminationId="term-local-warm-up",
        nodeId="local-warm-up",
        workloadId="local-warm-up",
        outcome="gone",
        detail="the local pump starting the function's container",
        reportedAt=datetime.now(UTC),
    )
    message = {"MessageId": str(uuid.uuid4()), "ReceiptHandle": "warm-up", "Body": report.to_json()}
    return sqs_event([message], queue_arn)


def every(
    seconds: float,
    stopping: threading.Event,
    step: Callable[[], None],
    name: str,
    first: Callable[[], None] | None = None,
    *,
    rate: bool = False,
) -> None:
    """Run ``step`` every ``seconds`` on a daemon thread until ``stopping`` (after ``first``,
    on the same thread: a function's warm-up must not hold the other loops back); a failed
    step is logged, and the next one runs on time. By default the wait comes after each
    step; with ``rate`` the steps start on a fixed schedule, as a schedule's ``rate()``
    invokes (a step that overran is followed by the next at once), so what a step is due
    to do is done within one period, however long the steps take."""

    def loop() -> None:
        try:
            if first is not None:
                first()
        except Exception:
            log.exception("warming %s failed", name)
        due = time.monotonic() + seconds
        while not stopping.wait(max(0.0, due - time.monotonic()) if rate else seconds):
            try:
                step()
            except Exception:
                log.exception("%s failed", name)
            due = max(due + seconds, time.monotonic())

    threading.Thread(target=loop, daemon=True, name=name).start()


def sweep(lambda_client: Any) -> None:
    counts = invoke(lambda_client, "SweeperFunction", schedule_event())
    if any(counts.get(k) for k in ("redelivered", "gave_up", "unsent")):
        log.info("sweep: %s", counts)


def relay_backlog(lambda_client: Any) -> None:
    counts = invoke(lambda_client, "EventBacklogFunction", schedule_event())
    if any(counts.get(k) for k in ("relayed", "failed", "deferred", "unreadable")):
        log.info("event backlog: %s", counts)


def move_history(lambda_client: Any) -> None:
    counts = invoke(lambda_client, "HistoryMoverFunction", schedule_event())
    if any(counts.get(k) for k in ("moved", "deferred")):
        log.info("history moves: %s", counts)


def run_clock(lambda_client: Any) -> None:
    counts = invoke(lambda_client, "ClockFunction", schedule_event())
    if any(counts.get(k) for k in ("fired", "deferred")):
        log.info("clock: %s", counts)


def until_answered(read: Callable[[], T], what: str, stopping: threading.Event) -> T | None:
    """``read()``, again every ``SETUP_RETRY_SECONDS`` until it answers (None once
    stopping). What the pump reads before its loops start (its queues, the table's stream)
    is read until the emulator answers: slowed or refusing when the pump starts (``make
    soak`` makes both), it must not end the pump, as it ends no event source mapping."""
    while not stopping.is_set():
        try:
            return read()
        except Exception as error:
            log.warning("%s: no answer (%r); again in %g s", what, error, SETUP_RETRY_SECONDS)
            stopping.wait(SETUP_RETRY_SECONDS)
    return None


def start_stream_pumps(
    args: argparse.Namespace, lambda_client: Any, stopping: threading.Event
) -> None:
    """The table's stream, polled for what its event source mappings would hand over."""
    dynamodb = boto3.client("dynamodb", endpoint_url=args.emulator, region_name=REGION)
    streams = boto3.client("dynamodbstreams", endpoint_url=args.emulator, region_name=REGION)

    def hand(function: str, event: dict[str, Any]) -> set[str]:
        return invoke_batch(lambda_client, function, event)

    pumps = until_answered(lambda: stream_pumps(dynamodb, streams, hand), "the stream", stopping)
    for pump in pumps or []:
        function = pump.mapping.function
        every(
            STREAM_POLL_SECONDS, stopping, pump.poll, f"{function} stream",
            first=lambda name=function: hand(name, {"Records": []}),  # its container, now
        )  # fmt: skip


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--lambda-endpoint", required=True)
    parser.add_argument("--sender-endpoint", help="the webhook sender's (default: the same)")
    parser.add_argument("--emulator", required=True)
    parser.add_argument("--sweep-every", type=float, default=5.0, help="seconds between sweeps")
    parser.add_argument(
        "--clock-every", type=float, default=CLOCK_SECONDS, help="seconds between clock passes"
    )
    return parser.parse_args(argv)


def _reports_queue(sqs: Any, name: str = REPORTS_QUEUE) -> tuple[str, str]:
    """A queue's URL and ARN (the termination reports queue's unless named)."""
    url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
    return url, attributes["Attributes"]["QueueArn"]


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s pump %(levelname)s %(message)s")
    sqs = boto3.client("sqs", endpoint_url=args.emulator, region_name=REGION)
    lambda_client = _lambda_client(args.lambda_endpoint)
    sender_endpoint = args.sender_endpoint or args.lambda_endpoint
    stopping = stop_on_signals()
    queue = until_answered(lambda: _reports_queue(sqs), "the reports queue", stopping)
    if queue is None:
        return 0

    def running() -> bool:  # a stop while the pump waits for sam local ends the wait
        return not stopping.is_set()

    if not wait_for_functions(args.lambda_endpoint, lambda_client, queue[1], running):
        return 0
    if not wait_for_port(_port(sender_endpoint), float("inf"), "127.0.0.1", running):
        return 0
    start_stream_pumps(args, lambda_client, stopping)
    every(args.sweep_every, stopping, lambda: sweep(lambda_client), "SweeperFunction")
    every(args.sweep_every, stopping, lambda: relay_backlog(lambda_client), "EventBacklogFunction")
    every(args.sweep_every, stopping, lambda: move_history(lambda_client), "HistoryMoverFunction")
    every(args.clock_every, stopping, lambda: run_clock(lambda_client), "ClockFunction", rate=True)
    start_delivery_pump(sqs, _lambda_client(sender_endpoint), stopping)
    threading.Thread(
        target=pump_reports_until, args=(stopping, sqs, lambda_client, queue), daemon=True,
        name="TerminationReportsFunction",
    ).start()  # fmt: skip
    stopping.wait()  # then out, whatever the loops' threads are doing (see stop_on_signals)
    return 0


def pump_reports_until(
    stopping: threading.Event, sqs: Any, lambda_client: Any, queue: tuple[str, str]
) -> None:
    """The termination reports to their function, batch after batch, until ``stopping``."""
    while not stopping.is_set():
        try:
            applied = pump_reports(sqs, lambda_client, *queue, wait=2)
            if applied:
                log.info("applied %d termination report(s)", applied)
        except Exception:
            log.exception("reports pump error")
            stopping.wait(1)


def _lambda_client(endpoint: str) -> Any:
    config = Config(read_timeout=120, retries={"max_attempts": 1})
    return boto3.client("lambda", endpoint_url=endpoint, region_name=REGION, config=config)


def _port(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[-1].rstrip("/"))


def start_delivery_pump(sqs: Any, lambda_client: Any, stopping: threading.Event) -> None:
    """The webhook delivery queue to WebhookSenderFunction, on a thread of its own (a batch
    takes up to its slowest endpoint's 10 s: it must not hold the reports back)."""
    deliveries = until_answered(
        lambda: _reports_queue(sqs, DELIVERY_QUEUE), "the delivery queue", stopping
    )
    if deliveries is None:
        return

    def step() -> None:
        sent = pump_queue(sqs, lambda_client, "WebhookSenderFunction", deliveries, wait=1)
        if sent:
            log.info("webhook sender done with %d message(s)", sent)

    def warm() -> None:  # its first delivery finds it initialised
        invoke(lambda_client, "WebhookSenderFunction", {"Records": []})

    every(0.1, stopping, step, "WebhookSenderFunction", first=warm)


def stop_on_signals() -> threading.Event:
    """Set on SIGINT or SIGTERM: the pump returns at once. Its loops run on daemon threads
    and are not waited for: one is most often in a long poll of its queue (2 s, which
    nothing can cut short) or in a call to ``sam local``, which ``make run`` stops at the
    same time; what a cut batch held comes back to its queue after its visibility timeout,
    and the emulator, which holds it, stops after the pump anyway. (The reports' loop ran
    on the main thread, so a stop waited for its poll to end.)"""
    stopping = threading.Event()

    def _stop(_signum: int, _frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    return stopping


def wait_for_functions(
    endpoint: str, lambda_client: Any, queue_arn: str, running: Callable[[], bool]
) -> bool:
    """make run starts the pump before `sam local start-lambda` listens (it waits as long as
    that takes, while ``running()``); then the reports function is called once, so its
    first report finds it initialised. False when stopped while waiting."""
    host, port = endpoint.rsplit("/", 1)[-1].rsplit(":", 1)
    if not wait_for_port(int(port), timeout=float("inf"), host=host, alive=running):
        return False
    try:
        invoke(lambda_client, "TerminationReportsFunction", warm_up_event(queue_arn))
    except Exception:
        log.exception("warming TerminationReportsFunction failed")
    return True


if __name__ == "__main__":
    exit_now(main())
