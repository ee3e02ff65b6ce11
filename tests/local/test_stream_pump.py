"""The local stack's stand-in for Lambda's stream event source mapping: the template's filter
matched as AWS matches it, and a batch retried from its first failure as often as the
mapping says, then left (to the scheduled relay)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from devstack import template
from devstack.streams import Mapping, StreamPump, matches

pytestmark = pytest.mark.disable_socket


def record(
    sequence: str, name: str = "INSERT", partition: str = "NODEEVT#node-a"
) -> dict[str, Any]:
    return {
        "eventID": sequence,
        "eventName": name,
        "dynamodb": {"Keys": {"PK": {"S": partition}}, "SequenceNumber": sequence},
    }


def mapping() -> Mapping:
    return Mapping.from_template(template.stream_mappings()["EventRelayStream"])


def test_the_templates_filter_passes_only_new_event_items():
    relay = mapping()
    assert relay.function == "EventRelayFunction"
    assert relay.passes(record("1"))
    assert not relay.passes(record("2", name="MODIFY"))
    assert not relay.passes(record("3", name="REMOVE"))
    assert not relay.passes(record("4", partition="NODE#node-a"))
    assert not relay.passes(record("5", partition="ORGEVT#org-a"))
    assert not relay.passes({"eventName": "INSERT", "dynamodb": {}})


def test_matching_follows_eventbridge_patterns():
    pattern = json.loads('{"a": ["x", "y"], "b": {"c": [{"prefix": "P#"}]}}')
    assert matches(pattern, {"a": "y", "b": {"c": "P#1"}, "extra": 1})
    assert not matches(pattern, {"a": "z", "b": {"c": "P#1"}})
    assert not matches(pattern, {"a": "x", "b": {"c": "Q#1"}})
    assert not matches(pattern, {"a": "x"})


class FakeStreams:
    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.records = records

    def describe_stream(self, StreamArn: str) -> dict[str, Any]:
        return {"StreamDescription": {"Shards": [{"ShardId": "shard-1"}]}}

    def get_shard_iterator(self, **_: Any) -> dict[str, Any]:
        return {"ShardIterator": "it-0"}

    def get_records(self, ShardIterator: str, Limit: int) -> dict[str, Any]:
        records, self.records = self.records, []
        return {"Records": records, "NextShardIterator": "it-1"}


def test_a_batch_is_retried_from_its_first_failure_then_left():
    handed: list[list[str]] = []

    def invoke(event: dict[str, Any]) -> set[str]:
        handed.append([r["dynamodb"]["SequenceNumber"] for r in event["Records"]])
        return {"3"}  # record 3 keeps failing

    records = [record(str(n)) for n in range(1, 6)] + [record("6", name="MODIFY")]
    pump = StreamPump(FakeStreams(records), "arn", mapping(), invoke, pause=lambda _s: None)
    assert pump.poll() == 5
    retries = mapping().retries
    assert handed == [["1", "2", "3", "4", "5"]] + [["3", "4", "5"]] * retries
    assert pump.poll() == 0  # nothing new: nothing handed again


def test_a_batch_whose_function_cannot_be_reached_is_retried_after_longer_pauses():
    """Its sam local killed and started again (``make soak``): the retries are spread over
    the seconds that takes, as the mapping backs off, not spent at once."""
    handed: list[int] = []
    paused: list[float] = []

    def unreachable(_event: dict[str, Any]) -> set[str]:
        handed.append(1)
        if len(handed) < 5:
            raise ConnectionRefusedError("start-lambda is down")
        return set()

    indexer = Mapping.from_template(template.stream_mappings()["FleetIndexerStream"])
    assert indexer.retries >= 5
    indexer = replace(indexer, filters=[])  # every record of these
    pump = StreamPump(FakeStreams([record("1")]), "arn", indexer, unreachable, pause=paused.append)
    pump.poll()
    assert len(handed) == 5  # the fifth try found it again
    assert paused == [1.0, 2.0, 4.0, 8.0]
    paused.clear()
    handed.clear()
    pump = StreamPump(
        FakeStreams([record("2")]),
        "arn",
        indexer,
        lambda _e: handed.append(1) or {"2"},
        pause=paused.append,
    )
    pump.poll()
    assert len(handed) == indexer.retries + 1
    assert paused == [1.0, 2.0, 4.0] + [8.0] * (indexer.retries - 3)


def test_a_batch_that_succeeds_is_handed_once():
    handed: list[int] = []
    pump = StreamPump(
        FakeStreams([record("1")]), "arn", mapping(), lambda e: handed.append(1) or set()
    )
    pump.poll()
    assert handed == [1]
