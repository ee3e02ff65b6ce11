"""Watching the local stack's event bus: a rule on the bus sends every event to a local
queue, and this command tails it.

    python -m devstack.events tail [--emulator URL] [--types T1,T2] [--json]

Each event is printed once (the command deletes what it printed): its time, type, subject
and id, or with ``--json`` the whole CloudEvent, one per line. ``make run`` makes the rule
and the queue when it provisions the emulator.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from collections.abc import Callable
from typing import IO, Any

from devstack.emulator import local_client

BUS = "EventBus"  # the template's bus, named by its logical id locally
WATCH_RULE = "LocalEventWatch"
WATCH_QUEUE = "LocalEventWatchQueue"
SOURCE = "reservations"


def watch(events: Any, sqs: Any, bus: str = BUS, queue: str = WATCH_QUEUE) -> str:
    """A rule on ``bus`` that sends every event of the service to the queue ``queue`` (made
    if missing); the queue's URL."""
    url: str = sqs.create_queue(QueueName=queue)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    rule = f"{WATCH_RULE}-{queue}"
    events.put_rule(Name=rule, EventBusName=bus, EventPattern=json.dumps({"source": [SOURCE]}))
    events.put_targets(Rule=rule, EventBusName=bus, Targets=[{"Id": queue, "Arn": arn}])
    return url


def received(sqs: Any, url: str, wait: int) -> list[dict[str, Any]]:
    """The events the queue holds now (each deleted once read): the CloudEvents, as put."""
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=wait)
    events = []
    for message in messages.get("Messages", []):
        events.append(json.loads(message["Body"])["detail"])
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return events


def line(event: dict[str, Any], whole: bool) -> str:
    if whole:
        return json.dumps(event, separators=(",", ":"))
    return f"{event['time']}  {event['type']:<32} {event['subject']:<28} {event['id']}"


def tail(
    sqs: Any,
    url: str,
    types: set[str],
    whole: bool,
    out: IO[str],
    stopped: Callable[[], bool],
) -> None:
    """Print every event of ``types`` (all when empty) as it arrives, until ``stopped``."""
    while not stopped():
        for event in received(sqs, url, wait=2):
            if not types or event.get("type") in types:
                print(line(event, whole), file=out, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    tail_command = commands.add_parser("tail", help="print the bus's events as they come")
    port = os.environ.get("AWS_EMULATOR_PORT", "5000")
    tail_command.add_argument("--emulator", default=f"http://127.0.0.1:{port}")
    tail_command.add_argument("--types", default="", help="comma-separated event types")
    tail_command.add_argument("--json", action="store_true", help="the whole CloudEvent")
    args = parser.parse_args(argv)
    sqs = local_client("sqs", args.emulator)
    url = watch(local_client("events", args.emulator), sqs)
    types = {name.strip() for name in args.types.split(",") if name.strip()}
    stop = threading.Event()
    try:
        tail(sqs, url, types, args.json, sys.stdout, stop.is_set)
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
