"""The event tests' table side over moto: events written as their changes will write them,
the table's stream handed to the relay function as Lambda's event source mapping would (the
local stack's own pump code, with the template's filter), and what reached the bus."""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType
from typing import Any

import boto3

from devstack import template
from devstack.events import received, watch
from devstack.functions import FakeContext
from devstack.sqs_events import failed_message_ids
from devstack.streams import Mapping, StreamPump
from reservations.kernel.aws.codec import to_attributes
from reservations.kernel.envelope import StoredEvent
from reservations.nodes.table.items import access_key
from reservations.nodes.table.records import put_event
from tests.support.state import TABLE


def write_events(events: Iterable[StoredEvent]) -> list[StoredEvent]:
    """Each event in its node's feed, marked, as its change's transaction will put it."""
    written = list(events)
    for stored in written:
        put_event(stored)
    return written


def name_workload_orgs(dynamodb: Any, node_id: str, org_ids: Iterable[str]) -> None:
    """What placement will do to the node's list access item (the fleet loader does not
    yet): the workload orgs that may read the node's feed."""
    dynamodb.update_item(
        TableName=TABLE,
        Key=to_attributes(access_key(node_id)),
        UpdateExpression="ADD workloadOrgIds :orgs",
        ExpressionAttributeValues=to_attributes({":orgs": set(org_ids)}),
    )


class StreamRelay:
    """The table's stream, read from its start, handed to the relay function batch by batch
    as the template's event source mapping says (filter, batch size, retries)."""

    def __init__(self, dynamodb: Any, relay: ModuleType) -> None:
        properties = template.stream_mappings()["EventRelayStream"]
        arn = dynamodb.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
        self.invocations: list[dict[str, Any]] = []
        self.relay = relay
        self.pump = StreamPump(
            boto3.client("dynamodbstreams"), arn, Mapping.from_template(properties), self._invoke
        )

    def _invoke(self, event: dict[str, Any]) -> set[str]:
        self.invocations.append(event)
        return failed_message_ids(self.relay.lambda_handler(event, FakeContext()))

    def run(self) -> int:
        """Hand over every new record; how many the filter passed."""
        return self.pump.poll()


class BusWatch:
    """A rule on the stack's bus to a queue, as the local stack makes one."""

    def __init__(self) -> None:
        self.sqs = boto3.client("sqs")
        self.url = watch(boto3.client("events"), self.sqs, queue="TestEventWatch")

    def events(self) -> list[dict[str, Any]]:
        """What arrived since the last call, in arrival order (duplicates kept)."""
        arrived: list[dict[str, Any]] = []
        while batch := received(self.sqs, self.url, wait=0):
            arrived.extend(batch)
        return arrived
