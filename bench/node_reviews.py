"""A node update that puts 10,000 reservations under review, in-process over moto: the PUT
(its requests, the bytes it sent and read, its largest item, its time) and the relay's work
deriving the 10,000 ``reservation.needs_review`` (the outlet's calls as successive relays
make them, requests, bytes, time), then the outlet asked again once it is done (a relay
that died before its mark: it goes on from its recorded end, and writes nothing twice).
``python -m bench.node_reviews``; measured, never
asserted. The time is moto's on this machine; requests and bytes transfer to DynamoDB."""

from __future__ import annotations

import io
import json
import os
import time
from collections import Counter
from contextlib import redirect_stdout
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from moto import mock_aws

from bench.environment import ENV
from devstack import fleet_documents as f
from devstack import moto_costs, template
from devstack.api_events import node_event
from devstack.fleets import NODE_QUEUE_PREFIX, load_fleet
from devstack.functions import FakeContext, load_function
from reservations.events.table.feeds import pending_event_from_item
from reservations.events.table.outlets import DerivedEvents
from reservations.kernel.aws import clients
from reservations.kernel.aws.codec import from_attributes, to_attributes
from reservations.nodes.table.keys import node_events_pk
from reservations_tools.fleet.loader import local_dead_letter_arn

REVIEWS = 10_000
U4, U5 = "0000:04:00.0", "0000:05:00.0"
OPERATOR = {"key": "vl_local_bench_operator", "orgId": "org-platform",
            "permissions": ["node.write"]}  # fmt: skip


class _Meter:
    """Every DynamoDB request the functions' client made: by operation, bytes sent, read."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.sent = self.read = 0
        events = clients.dynamodb().meta.events
        events.register("before-send.dynamodb", self._sent)
        events.register("after-call.dynamodb", self._read)

    def _sent(self, request: Any, **_: Any) -> None:
        self.sent += len(request.body or b"")

    def _read(self, http_response: Any, model: Any, **_: Any) -> None:
        self.calls[model.name] += 1
        self.read += len(http_response.content)

    def take(self) -> dict[str, Any]:
        figures = {"requests": dict(self.calls), "sent": self.sent, "read": self.read}
        self.calls, self.sent, self.read = Counter(), 0, 0
        return figures


def _fleet() -> dict[str, Any]:
    start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(hours=2)
    booked = [
        f.reservation(f"res-{n:05}", [U4], status="pending",
                      startsAt=f.iso(start + timedelta(hours=n)),
                      endsAt=f.iso(start + timedelta(hours=n + 1)))
        for n in range(REVIEWS)
    ]  # fmt: skip
    return f.fleet([f.node("node-a", [f.unit(U4), f.unit(U5)], booked)], [OPERATOR])


def _update_item(dynamodb: Any) -> dict[str, Any]:
    items = dynamodb.query(
        TableName=ENV["TABLE_NAME"],
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues=to_attributes({":pk": node_events_pk("node-a")}),
    )["Items"]
    return next(from_attributes(i) for i in items if from_attributes(i)["type"] == "node.updated")


def _derive(stored: Any, meter: _Meter) -> dict[str, Any]:
    """The outlet called as successive relays would, each with its own time budget."""
    outlet, calls, start = DerivedEvents(), 0, time.perf_counter()
    while True:
        calls += 1
        if outlet.deliver([stored]) == set():
            break
    return {"outlet calls": calls, "seconds": round(time.perf_counter() - start, 2)} | meter.take()


def run() -> dict[str, Any]:
    os.environ.update(ENV | {"NODE_QUEUE_PREFIX": NODE_QUEUE_PREFIX})
    moto_costs.install()
    with mock_aws():
        clients.reset()
        dynamodb, sqs = boto3.client("dynamodb"), boto3.client("sqs")
        template.create_tables(dynamodb)
        template.create_queues(sqs)
        os.environ["NODE_DEAD_LETTER_QUEUE_ARN"] = local_dead_letter_arn(sqs)
        load_fleet(_fleet(), dynamodb, sqs)
        put_node = load_function("put_node")
        meter = _Meter()
        body = {"ownerOrgId": "org-acme", "topologyGen": 2,
                "units": [f.unit(U4, gpuModelId="nvidia-b200"), f.unit(U5)]}  # fmt: skip
        event = node_event("node-a", body, f"Bearer {OPERATOR['key']}")
        with redirect_stdout(io.StringIO()):
            start = time.perf_counter()
            answer = put_node.lambda_handler(event, FakeContext())
            seconds = time.perf_counter() - start
        item = _update_item(dynamodb)
        put = {"status": answer["statusCode"], "seconds": round(seconds, 2)} | meter.take()
        put["event item bytes"] = len(json.dumps(item, default=str))
        stored = pending_event_from_item(item).stored
        derived = _derive(stored, meter)
        replayed = _derive(stored, meter)  # asked again once done: a relay died before its mark
        clients.reset()
        return {"reviews": REVIEWS, "put": put, "derive": derived, "replay": replayed}


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
