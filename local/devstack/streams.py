"""What Lambda's event source mapping does with the table's DynamoDB Stream, for the local
stack (``sam local`` runs no stream triggers): read every shard from its start, keep the
records the mapping's filter passes, hand them to the function in the stream event's shape,
and retry a batch from its first reported failure as many times as the mapping says, after
a pause that doubles each time (1 s, then 2, 4 and 8 s at most), as the mapping backs off:
a function that cannot be reached for a few seconds (its ``sam local`` killed and started
again) does not use up every retry at once.

The mapping (filter, batch size, retries) is read from template.yaml, so what runs locally
is what deploys.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from devstack import template
from devstack.emulator import REGION

log = logging.getLogger("pump")
FIRST_PAUSE, LAST_PAUSE = 1.0, 8.0  # seconds before a batch's first retry; the most
# A batch handed to the function: its stream event -> the sequence numbers it failed.
Invoke = Callable[[dict[str, Any]], set[str]]


def matches(pattern: Any, value: Any) -> bool:
    """EventBridge-style filter matching, the subset event source mapping filters use here:
    nested objects, lists of accepted values, and ``{"prefix": ...}``."""
    if isinstance(pattern, dict):
        return isinstance(value, dict) and all(
            key in value and matches(rule, value[key]) for key, rule in pattern.items()
        )
    return any(
        (isinstance(accepted, dict) and isinstance(value, str)
         and value.startswith(accepted.get("prefix", "\x00")))
        or accepted == value
        for accepted in pattern
    )  # fmt: skip


def lambda_record(record: dict[str, Any], stream_arn: str) -> dict[str, Any]:
    """A GetRecords record as Lambda hands it to the function."""
    change = dict(record["dynamodb"])
    created = change.get("ApproximateCreationDateTime")
    if isinstance(created, datetime):
        change["ApproximateCreationDateTime"] = created.timestamp()
    return {
        "eventID": record["eventID"],
        "eventName": record["eventName"],
        "eventVersion": record.get("eventVersion", "1.1"),
        "eventSource": "aws:dynamodb",
        "awsRegion": record.get("awsRegion", REGION),
        "dynamodb": change,
        "eventSourceARN": stream_arn,
    }


@dataclass
class Mapping:
    """One stream event source mapping of the template."""

    function: str
    filters: list[Any]
    batch_size: int
    retries: int

    @classmethod
    def from_template(cls, properties: dict[str, Any]) -> Mapping:
        criteria = properties.get("FilterCriteria", {}).get("Filters", [])
        return cls(
            function=properties["FunctionName"]["Ref"],
            filters=[json.loads(f["Pattern"]) for f in criteria],
            batch_size=int(properties.get("BatchSize", 100)),
            retries=int(properties.get("MaximumRetryAttempts", 0)),
        )

    def passes(self, record: dict[str, Any]) -> bool:
        return not self.filters or any(matches(f, record) for f in self.filters)


@dataclass
class StreamPump:
    """Polls every shard of one table's stream and feeds one mapping's function."""

    streams: Any
    stream_arn: str
    mapping: Mapping
    invoke: Invoke
    iterators: dict[str, str | None] = field(default_factory=dict)
    pause: Callable[[float], None] = time.sleep

    def poll(self) -> int:
        """One round over the shards; the records handed to the function."""
        self._discover_shards()
        handed = 0
        for shard_id, iterator in list(self.iterators.items()):
            if iterator is None:
                continue  # a closed shard, read to its end
            page = self.streams.get_records(ShardIterator=iterator, Limit=1000)
            self.iterators[shard_id] = page.get("NextShardIterator")
            records = [lambda_record(r, self.stream_arn) for r in page["Records"]]
            handed += self._hand([r for r in records if self.mapping.passes(r)])
        return handed

    def _discover_shards(self) -> None:
        shards = self.streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]
        for shard in shards["Shards"]:
            if shard["ShardId"] not in self.iterators:
                self.iterators[shard["ShardId"]] = self.streams.get_shard_iterator(
                    StreamArn=self.stream_arn,
                    ShardId=shard["ShardId"],
                    ShardIteratorType="TRIM_HORIZON",
                )["ShardIterator"]

    def _hand(self, records: list[dict[str, Any]]) -> int:
        for start in range(0, len(records), self.mapping.batch_size):
            self._batch(records[start : start + self.mapping.batch_size])
        return len(records)

    def _batch(self, batch: list[dict[str, Any]]) -> None:
        """Hand one batch over; on reported failures, again from the first failed record,
        up to the mapping's retries, each after a longer pause (then the scheduled relay has
        what is left)."""
        for attempt in range(self.mapping.retries + 1):
            if attempt:
                self.pause(min(FIRST_PAUSE * 2 ** (attempt - 1), LAST_PAUSE))
            try:
                failed = self.invoke({"Records": batch})
            except Exception:  # the whole batch failed, as AWS would retry it
                log.exception("%s failed; the batch is retried", self.mapping.function)
                continue
            sequence = [r["dynamodb"]["SequenceNumber"] for r in batch]
            first = min((sequence.index(s) for s in failed if s in sequence), default=None)
            if first is None:
                return
            batch = batch[first:]
        log.warning(
            "%s: %d record(s) left to the scheduled relay", self.mapping.function, len(batch)
        )


def stream_pumps(
    dynamodb: Any, streams: Any, invoke: Callable[[str, dict[str, Any]], set[str]]
) -> list[StreamPump]:
    """A pump per stream event source mapping of the template, on its table's stream."""
    pumps = []
    for properties in template.stream_mappings().values():
        table = properties["EventSourceArn"]["Fn::GetAtt"][0]
        arn = dynamodb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
        mapping = Mapping.from_template(properties)
        pumps.append(
            StreamPump(
                streams, arn, mapping, lambda event, name=mapping.function: invoke(name, event)
            )
        )
    return pumps
