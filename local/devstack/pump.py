"""What AWS would do around the non-HTTP functions, for the local stack.

Long-polls the termination reports queue and hands each batch to TerminationReportsFunction
through ``sam local start-lambda`` (the real function in its container), deleting only the
records its partial-batch response did not list; and runs SweeperFunction on a period.

    python -m devstack.pump --lambda-endpoint http://127.0.0.1:3001 --emulator URL
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from types import FrameType
from typing import Any

import boto3
from botocore.config import Config

from devstack.emulator import REGION
from devstack.net import wait_for_port
from devstack.sqs_events import failed_message_ids, schedule_event, sqs_event
from reservations.models.messages import TerminationReport

log = logging.getLogger("pump")
REPORTS_QUEUE = "TerminationReportsQueue"


def invoke(lambda_client: Any, function: str, event: dict[str, Any]) -> dict[str, Any]:
    response = lambda_client.invoke(FunctionName=function, Payload=json.dumps(event).encode())
    payload = json.loads(response["Payload"].read() or b"{}")
    if response.get("FunctionError"):
        raise RuntimeError(f"{function} failed: {payload}")
    return payload if isinstance(payload, dict) else {}


def pump_reports(sqs: Any, lambda_client: Any, queue_url: str, queue_arn: str, wait: int) -> int:
    messages = sqs.receive_message(
        QueueUrl=queue_url,
        MaxNumberOfMessages=10,
        WaitTimeSeconds=wait,
        MessageSystemAttributeNames=["ApproximateReceiveCount"],
    ).get("Messages", [])
    if not messages:
        return 0
    try:
        failed = failed_message_ids(
            invoke(lambda_client, "TerminationReportsFunction", sqs_event(messages, queue_arn))
        )
    except Exception:  # a failed invocation retries the whole batch, as AWS would
        log.exception("TerminationReportsFunction failed; the batch will be retried")
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


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--lambda-endpoint", required=True)
    parser.add_argument("--emulator", required=True)
    parser.add_argument("--sweep-every", type=float, default=5.0, help="seconds between sweeps")
    return parser.parse_args(argv)


def _lambda_client(endpoint: str) -> Any:
    """``sam local start-lambda``, once it listens (make run starts the pump before it)."""
    host, port = endpoint.rsplit("/", 1)[-1].rsplit(":", 1)
    wait_for_port(int(port), timeout=300, host=host)
    config = Config(read_timeout=120, retries={"max_attempts": 1})
    return boto3.client("lambda", endpoint_url=endpoint, region_name=REGION, config=config)


def _reports_queue(sqs: Any) -> tuple[str, str]:
    """The termination reports queue's URL and ARN."""
    url = sqs.get_queue_url(QueueName=REPORTS_QUEUE)["QueueUrl"]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
    return url, attributes["Attributes"]["QueueArn"]


def _stopped_by_signals() -> threading.Event:
    """Set on SIGINT or SIGTERM: the pump finishes the batch in hand and returns."""
    stopping = threading.Event()

    def _stop(_signum: int, _frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    return stopping


def sweep_every(lambda_client: Any, seconds: float, stopping: threading.Event) -> None:
    """SweeperFunction on a period, as its schedule would run it, until ``stopping``."""
    while not stopping.wait(seconds):
        try:
            counts = invoke(lambda_client, "SweeperFunction", schedule_event())
            if any(counts.get(k) for k in ("redelivered", "gave_up", "unsent")):
                log.info("sweep: %s", counts)
        except Exception:
            log.exception("SweeperFunction failed")


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s pump %(levelname)s %(message)s")
    sqs = boto3.client("sqs", endpoint_url=args.emulator, region_name=REGION)
    queue_url, queue_arn = _reports_queue(sqs)
    lambda_client = _lambda_client(args.lambda_endpoint)
    try:  # start the reports function's container now, not on the first report
        invoke(lambda_client, "TerminationReportsFunction", warm_up_event(queue_arn))
    except Exception:
        log.exception("warming TerminationReportsFunction failed")
    stopping = _stopped_by_signals()
    sweeps = (lambda_client, args.sweep_every, stopping)
    threading.Thread(target=sweep_every, args=sweeps, daemon=True).start()
    while not stopping.is_set():
        try:
            applied = pump_reports(sqs, lambda_client, queue_url, queue_arn, wait=2)
            if applied:
                log.info("applied %d termination report(s)", applied)
        except Exception:
            log.exception("reports pump error")
            time.sleep(1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
