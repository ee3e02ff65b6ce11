"""The table's stream handed to the fleet indexer as the template's event source mapping
would (filter, batch size, retries): what the deployed stack and the local pump do."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import boto3

from devstack import template
from devstack.functions import FakeContext, load_function
from devstack.sqs_events import failed_message_ids
from devstack.streams import Mapping, StreamPump
from tests.support.state import TABLE


class FleetStream:
    """Reads the stream from its start; :meth:`run` hands over what is new."""

    def __init__(self, dynamodb: Any, indexer: ModuleType | None = None) -> None:
        properties = template.stream_mappings()["FleetIndexerStream"]
        arn = dynamodb.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
        self.indexer = indexer or load_function("fleet_indexer")
        self.batches: list[dict[str, Any]] = []
        self.pump = StreamPump(
            boto3.client("dynamodbstreams"), arn, Mapping.from_template(properties), self._invoke
        )

    def _invoke(self, event: dict[str, Any]) -> set[str]:
        self.batches.append(event)
        return failed_message_ids(self.indexer.lambda_handler(event, FakeContext()))

    def run(self) -> int:
        """Hand over every new record; how many the filter passed."""
        return self.pump.poll()
