"""Requests per node write and re-affirm, counted at botocore's endpoint (every client, every
attempt): an update and a re-affirm are 2 DynamoDB requests (Query, TransactWriteItems); a
new node adds one SQS CreateQueue, sent before the transaction; a repeat of what is stored
is the Query alone."""

from __future__ import annotations

from collections import Counter
from typing import Any

import boto3
import pytest

from devstack import fleet_documents as f
from devstack.api_events import node_event, reaffirm_event
from devstack.fleets import NODE_QUEUE_PREFIX
from devstack.functions import invoke, load_function
from reservations.kernel.aws import clients
from reservations_tools.fleet.loader import local_dead_letter_arn

pytestmark = pytest.mark.moto

OPERATOR = "Bearer vl_local_test_node_operator"
KEYS = [
    {"key": "vl_local_test_node_operator", "orgId": "org-platform", "permissions": ["node.write"]}
]
UNITS = [f"0000:{i:02x}:00.0" for i in range(1, 9)]


@pytest.fixture(scope="module")
def functions() -> dict[str, Any]:
    return {name: load_function(name) for name in ("put_node", "reaffirm")}


@pytest.fixture
def loaded(load_fleet: Any, aws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NODE_QUEUE_PREFIX", NODE_QUEUE_PREFIX)
    monkeypatch.setenv("NODE_DEAD_LETTER_QUEUE_ARN", local_dead_letter_arn(boto3.client("sqs")))
    clients.reset()
    reservations = [
        f.reservation("res-review", UNITS[:2], status="needs-review"),
        f.reservation("res-live", UNITS[2:4]),
    ]
    load_fleet(f.fleet([f.node("node-a", [f.unit(u) for u in UNITS], reservations)], KEYS))


def _put(functions: Any, node_id: str, gen: int, units: list[str]) -> int:
    body = {"ownerOrgId": "org-acme", "topologyGen": gen, "units": [f.unit(u) for u in units]}
    return invoke(functions["put_node"], node_event(node_id, body, OPERATOR)).status


def _warm(functions: Any) -> None:
    """Caches the operator's key, as in a warm container."""
    assert _put(functions, "node-a", 1, UNITS) == 200


def test_a_node_update_is_two_dynamodb_requests(functions, loaded, sent_requests):
    _warm(functions)
    sent_requests.clear()
    # A unit removed and one changed: reservations put under review in the same write.
    assert _put(functions, "node-a", 2, [*UNITS[1:7], "0000:0f:00.0"]) == 200
    assert sent_requests.sent == [("dynamodb", "Query"), ("dynamodb", "TransactWriteItems")]


def test_a_new_node_is_two_dynamodb_requests_and_one_create_queue_before_the_write(
    functions, loaded, sent_requests
):
    _warm(functions)
    sent_requests.clear()
    assert _put(functions, "node-new", 1, UNITS) == 201
    assert sent_requests.sent == [
        ("dynamodb", "Query"),
        ("sqs", "CreateQueue"),
        ("dynamodb", "TransactWriteItems"),
    ]


def test_a_repeat_of_the_stored_node_is_one_request(functions, loaded, sent_requests):
    _warm(functions)
    sent_requests.clear()
    assert _put(functions, "node-a", 1, UNITS) == 200
    assert sent_requests.sent == [("dynamodb", "Query")]


@pytest.mark.parametrize("key", [None, "budget-key"])
def test_a_reaffirm_is_two_dynamodb_requests_with_or_without_a_key(
    functions, loaded, sent_requests, key
):
    _warm(functions)
    sent_requests.clear()
    event = reaffirm_event("node-a", "res-review", {"reason": "ok"}, OPERATOR, key)
    assert invoke(functions["reaffirm"], event).status == 200
    assert sent_requests.by_service("dynamodb") == Counter({"Query": 1, "TransactWriteItems": 1})
    assert len(sent_requests.sent) == 2


def test_a_kept_reaffirm_refusal_is_two_requests_and_its_replay_too(
    functions, loaded, sent_requests
):
    _warm(functions)
    for _ in range(2):
        sent_requests.clear()
        event = reaffirm_event("node-a", "res-live", None, OPERATOR, "refused")
        assert invoke(functions["reaffirm"], event).status == 409
        assert sent_requests.sent == [("dynamodb", "Query"), ("dynamodb", "PutItem")]
