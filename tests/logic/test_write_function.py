"""A write route's Lambda function as deployed (``functions/create_reservation/app.py``),
called with API Gateway's event over the in-memory fakes: the Idempotency-Key header reaches
the pipeline, a base64 body is decoded, the declared media type is honoured, and the answer
is the logic's as it rendered it (status, body, Location, the replay mark)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from devstack.api_events import create_event
from devstack.functions import FakeContext, load_function
from reservations.http import resolver
from reservations.logic.create_reservation import CREATE
from reservations.models.domain import ApiKey
from tests.logic.conftest import unit
from tests.support.fakes import FakeClock, FakeTable, ports

FREE = ["0000:0b:00.0", "0000:0c:00.0"]
BODY = {"unitIds": FREE, "allowedOrgIds": ["org-lab"]}
OWNER_KEY = ApiKey("key-owner", "org-acme", frozenset({"reservation.write"}), False)


@pytest.fixture
def call(
    store: FakeTable, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The create function over the fakes, every bearer the node owner's key."""
    partition = store.nodes["node-a"]
    partition.node = replace(partition.node, topology_gen=7)
    for unit_id in FREE:
        partition.units[unit_id] = unit(unit_id)
    module = load_function("create_reservation")
    ids = iter(f"res-new{i}" for i in range(10))
    module.function.ports = ports(store, clock, new_id=lambda: next(ids))
    monkeypatch.setattr(resolver.store, "load_api_key", lambda _hash: OWNER_KEY)
    resolver.key_cache.clear()
    assert module.function.spec is CREATE  # what the contract tests read its refusals from

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = module.lambda_handler(event, FakeContext())
        return answer

    return invoke


def event(body: Any = BODY, key: str | None = None) -> dict[str, Any]:
    return create_event("node-a", body, "Bearer vl_local_test_owner", key)


def test_a_keyed_create_answers_201_and_its_retry_the_same_bytes_marked_replayed(call, store):
    first = call(event(key="k-1"))
    assert first["statusCode"] == 201
    assert first["headers"]["Location"] == "/v1/nodes/node-a/reservations/res-new0"
    assert first["headers"]["Content-Type"] == "application/json"
    assert json.loads(first["body"])["id"] == "res-new0"
    again = call(event(key="k-1"))
    assert again["statusCode"] == 201
    assert again["body"] == first["body"]
    assert again["headers"]["Idempotent-Replayed"] == "true"
    assert again["headers"]["Location"] == first["headers"]["Location"]
    assert list(store.nodes["node-a"].reservations) == ["res-1", "res-new0"]
    # The same key for another body: 422, nothing written.
    other = call(event({**BODY, "unitIds": FREE[:1]}, key="k-1"))
    assert other["statusCode"] == 422
    assert json.loads(other["body"])["code"] == "idempotency_key_reused"


def test_a_base64_body_is_decoded_and_a_body_declared_not_json_is_415(call):
    encoded = event()
    encoded["body"] = base64.b64encode(json.dumps(BODY).encode()).decode()
    encoded["isBase64Encoded"] = True
    assert call(encoded)["statusCode"] == 201
    text = event()
    text["headers"]["content-type"] = "text/plain"
    refused = call(text)
    assert refused["statusCode"] == 415
    assert json.loads(refused["body"])["code"] == "unsupported_media_type"
