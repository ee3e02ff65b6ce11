"""Requests per call, counted at botocore's endpoint (every client, every attempt).

The budgets: list 1 request with the key cached and 2 without; a dry run 1; a reclaim of k
terminations 2 DynamoDB requests (Query, TransactWriteItems) plus ceil(k/10) SQS requests,
with or without an Idempotency-Key, by unit ids, by count or as a plan's apply (its dry run:
1); a replay at most 2. The same call on a node among 10 and
among 10,000 nodes sends the same requests and reads the same items.

These are the budgets of writes answered within the feeds' settle window. A write answered
later costs one PutItem more per event it wrote (``docs/feeds.md``; counted in
``tests/events/test_late_event_writes.py``); over moto on a loaded machine a transaction
can take that long, so here the feed writer's clock moves only as it is read.
"""

from __future__ import annotations

import math
from collections import Counter
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import boto3
import pytest
from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends

from devstack import fleet_documents as f
from devstack.api_events import list_units_event, reclaim_event, reclaim_plan_event
from devstack.functions import invoke, load_function
from reservations.kernel.aws import event_items
from reservations.kernel.http.resolver import key_cache

pytestmark = pytest.mark.moto

BROKER = "Bearer vl_local_test_broker"


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    return {name: load_function(name) for name in ("reclaim", "list_units")}


@pytest.fixture(autouse=True)
def answered_in_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The feed writer's clock: from now, a millisecond more at each reading, so that every
    write is answered within the settle window however slowly moto answers it."""
    now = [datetime.now(UTC)]

    def read() -> datetime:
        now[0] += timedelta(milliseconds=1)
        return now[0]

    monkeypatch.setattr(event_items, "record_clock", read)


def _node(node_id: str, k: int) -> dict[str, Any]:
    """A node whose reservation lends k units, each running one spot VM."""
    ids = [f"0000:{i:02x}:00.0" for i in range(1, k + 1)]
    return f.node(
        node_id,
        [f.unit(u) for u in ids],
        [f.reservation("res-1", ids, releasedUnitIds=ids)],
        [f.workload(f"vm-{i}", [u]) for i, u in enumerate(ids)],
    )


def _reclaim(functions, k: int, key: str | None = None, node: str = "node-a") -> Any:
    body = {"unitIds": [f"0000:{i:02x}:00.0" for i in range(1, k + 1)]}
    return invoke(functions["reclaim"], reclaim_event(node, "res-1", body, BROKER, key))


def _warm(functions) -> None:
    """Caches the broker's key, as in a warm container."""
    invoke(functions["list_units"], list_units_event("node-a", BROKER))


def test_list_is_one_request_warm_and_two_cold(functions, load_fleet, sent_requests):
    load_fleet(f.fleet([_node("node-a", 2)]))
    key_cache.clear()
    sent_requests.clear()
    assert invoke(functions["list_units"], list_units_event("node-a", BROKER)).status == 200
    assert sent_requests.sent == [("dynamodb", "GetItem"), ("dynamodb", "Query")]
    sent_requests.clear()
    assert invoke(functions["list_units"], list_units_event("node-a", BROKER)).status == 200
    assert sent_requests.sent == [("dynamodb", "Query")]


def test_a_dry_run_is_one_request(functions, load_fleet, sent_requests):
    load_fleet(f.fleet([_node("node-a", 4)]))
    _warm(functions)
    sent_requests.clear()
    body = {"unitIds": ["0000:01:00.0"], "dryRun": True}
    result = invoke(functions["reclaim"], reclaim_event("node-a", "res-1", body, BROKER, "k"))
    assert result.status == 200
    assert sent_requests.sent == [("dynamodb", "Query")]


@pytest.mark.parametrize("k", [1, 4, 10, 11, 16])
@pytest.mark.parametrize("key", [None, "budget-key"])
def test_a_reclaim_is_two_dynamodb_requests_and_one_sqs_request_per_ten(
    functions, load_fleet, sent_requests, k, key
):
    load_fleet(f.fleet([_node("node-a", k)]))
    _warm(functions)
    sent_requests.clear()
    result = _reclaim(functions, k, key)
    assert len(result.body["terminated"]) == k
    assert sent_requests.by_service("dynamodb") == Counter({"Query": 1, "TransactWriteItems": 1})
    assert sent_requests.by_service("sqs") == Counter({"SendMessageBatch": math.ceil(k / 10)})
    assert {service for service, _ in sent_requests.sent} == {"dynamodb", "sqs"}


@pytest.mark.parametrize("k", [1, 11])
def test_a_reclaim_by_count_is_two_dynamodb_requests_and_one_sqs_request_per_ten(
    functions, load_fleet, sent_requests, k
):
    load_fleet(f.fleet([_node("node-a", k)]))
    _warm(functions)
    sent_requests.clear()
    event = reclaim_event("node-a", "res-1", {"count": k}, BROKER, "by-count")
    result = invoke(functions["reclaim"], event)
    assert len(result.body["terminated"]) == k
    assert sent_requests.by_service("dynamodb") == Counter({"Query": 1, "TransactWriteItems": 1})
    assert sent_requests.by_service("sqs") == Counter({"SendMessageBatch": math.ceil(k / 10)})


@pytest.mark.parametrize("k", [1, 11])
@pytest.mark.parametrize("key", [None, "apply-key"])
def test_a_plan_is_one_request_and_its_apply_two_plus_one_sqs_request_per_ten(
    functions, load_fleet, sent_requests, k, key
):
    load_fleet(f.fleet([_node("node-a", k)]))
    _warm(functions)
    sent_requests.clear()
    dry = reclaim_event("node-a", "res-1", {"count": k, "dryRun": True}, BROKER)
    plan = invoke(functions["reclaim"], dry).body["planId"]
    assert sent_requests.sent == [("dynamodb", "Query")]
    sent_requests.clear()
    applied = invoke(functions["reclaim"], reclaim_plan_event("node-a", "res-1", plan, BROKER, key))
    assert len(applied.body["terminated"]) == k
    assert sent_requests.by_service("dynamodb") == Counter({"Query": 1, "TransactWriteItems": 1})
    assert sent_requests.by_service("sqs") == Counter({"SendMessageBatch": math.ceil(k / 10)})


def test_a_notice_costs_nothing_more_nor_does_moving_a_deadline_earlier(
    functions, load_fleet, sent_requests
):
    load_fleet(f.fleet([_node("node-a", 3)]))
    _warm(functions)
    units = ["0000:01:00.0", "0000:02:00.0", "0000:03:00.0"]
    for notice in (3600, 60):  # the second moves all three deadlines: three messages again
        sent_requests.clear()
        body = {"unitIds": units, "noticeSeconds": notice}
        result = invoke(functions["reclaim"], reclaim_event("node-a", "res-1", body, BROKER))
        assert result.status == 200
        assert sent_requests.by_service("dynamodb") == Counter(
            {"Query": 1, "TransactWriteItems": 1}
        )
        assert sent_requests.by_service("sqs") == Counter({"SendMessageBatch": 1})


def test_a_replay_is_at_most_two_requests(functions, load_fleet, sent_requests):
    load_fleet(f.fleet([_node("node-a", 3)]))
    _warm(functions)
    first = _reclaim(functions, 3, "replayed")
    sent_requests.clear()
    again = _reclaim(functions, 3, "replayed")
    assert again.body_text == first.body_text
    assert sent_requests.sent == [("dynamodb", "Query"), ("dynamodb", "TransactWriteItems")]


def test_a_kept_refusal_is_two_requests_and_its_replay_too(functions, load_fleet, sent_requests):
    load_fleet(f.fleet([_node("node-a", 1)]))
    _warm(functions)
    body = {"unitIds": ["0000:0f:00.0"]}  # not reserved: 422, kept
    for _ in range(2):
        sent_requests.clear()
        event = reclaim_event("node-a", "res-1", body, BROKER, "refused")
        assert invoke(functions["reclaim"], event).status == 422
        assert sent_requests.sent == [("dynamodb", "Query"), ("dynamodb", "PutItem")]


def _calls(functions, sent_requests, node: str) -> dict[str, Any]:
    """The requests and items read of list, dry run and reclaim on ``node``."""
    seen = {}
    for name, call in (
        ("list", lambda: invoke(functions["list_units"], list_units_event(node, BROKER))),
        ("reclaim", lambda: _reclaim(functions, 2, node=node)),
    ):
        sent_requests.clear()
        assert call().status == 200
        seen[name] = (list(sent_requests.sent), list(sent_requests.items_read))
    return seen


def test_the_same_call_costs_the_same_among_10_and_among_10000_nodes(
    functions, load_fleet, aws, sent_requests
):
    load_fleet(f.fleet([_node(f"node-{i}", 2) for i in range(10)]))
    invoke(functions["list_units"], list_units_event("node-0", BROKER))  # cache the key
    small = _calls(functions, sent_requests, "node-0")
    _add_nodes(range(10, 10_000))
    large = _calls(functions, sent_requests, "node-1")
    assert small == large
    # The node, its 2 units, its reservation and its 2 workloads: its own partition only.
    assert small["list"][1] == [(6, 6)]


def _add_nodes(numbers: range) -> None:
    """Straight into moto's table (as fast as the test needs; the shape is what matters)."""
    table = dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].get_table("ReservationsTable")
    for number in numbers:
        partition = {"S": f"NODE#node-{number}"}
        table.put_item({"PK": partition, "SK": {"S": "#NODE"}, "version": {"N": "1"}})
        table.put_item({"PK": partition, "SK": {"S": "UNIT#0000:01:00.0"}, "version": {"N": "1"}})
    boto3.client("dynamodb").describe_table(TableName="ReservationsTable")
