"""The contract's "What every response carries": ``X-Request-Id`` on every response and
``requestId`` in every error body (the id the log lines carry), ``Retry-After`` on a 503 and
on 409 ``conflict``, ``Idempotent-Replayed: true`` on a replay (body and status those of the
first answer), and the 415 for a body declared as anything but JSON, in its place in the
order of checks (401 → 404 → 415).

In-process over moto, through each function's Lambda handler.
"""

from __future__ import annotations

import copy
import io
import json
import logging
import re
from types import ModuleType
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from devstack import fleet_documents as f
from devstack.api_events import create_event, list_units_event, reclaim_event
from devstack.functions import invoke, load_function
from reservations.kernel.aws import clients
from reservations.kernel.observability import logger
from tests.capacity.test_reclaim_handler import standard_fleet
from tests.lifecycle.test_reservations_handler import WRITERS
from tests.support import state
from tests.support.faults import on_call

pytestmark = pytest.mark.moto

BROKER = "Bearer vl_local_test_broker"
OWNER = "Bearer vl_local_test_writer"
STRANGER = "Bearer vl_local_test_stranger"
ONE = {"unitIds": ["0000:04:00.0"]}


@pytest.fixture(scope="module")
def reclaim() -> ModuleType:
    return load_function("reclaim")


@pytest.fixture(scope="module")
def list_units() -> ModuleType:
    return load_function("list_units")


@pytest.fixture(scope="module")
def not_found() -> ModuleType:
    return load_function("not_found")


@pytest.fixture
def fleet(load_fleet: Any) -> None:
    load_fleet(standard_fleet())


def with_request_id(event: dict[str, Any], request_id: str | None) -> dict[str, Any]:
    event = copy.deepcopy(event)
    if request_id is None:
        event["requestContext"].pop("requestId", None)
    else:
        event["requestContext"]["requestId"] = request_id
    return event


def declared(event: dict[str, Any], content_type: str | None) -> dict[str, Any]:
    event = copy.deepcopy(event)
    event["headers"].pop("content-type", None)
    if content_type is not None:
        event["headers"]["content-type"] = content_type
    return event


# --- X-Request-Id and requestId --------------------------------------------------------------


def test_a_success_carries_api_gateways_request_id(list_units, fleet):
    event = with_request_id(list_units_event("node-a", BROKER), "req-ok-1")
    result = invoke(list_units, event)
    assert result.status == 200
    assert result.headers["x-request-id"] == "req-ok-1"


@pytest.mark.parametrize(
    ("authorization", "node", "status"),
    [(None, "node-a", 401), (STRANGER, "node-a", 404), (BROKER, "no-such-node", 404)],
)
def test_an_error_names_the_request_in_its_header_and_body(
    list_units, fleet, authorization, node, status
):
    event = with_request_id(list_units_event(node, authorization), "req-err-1")
    result = invoke(list_units, event)
    assert result.status == status
    assert result.headers["x-request-id"] == "req-err-1"
    assert result.body["requestId"] == "req-err-1"


def test_an_unknown_route_names_the_request_too(not_found):
    event = with_request_id(list_units_event("node-a", BROKER), "req-none-1")
    result = invoke(not_found, event)
    assert (result.status, result.body["code"]) == (404, "not_found")
    assert result.headers["x-request-id"] == result.body["requestId"] == "req-none-1"


def test_a_request_without_an_id_gets_one_made_and_each_its_own(list_units, fleet):
    event = with_request_id(list_units_event("node-a", STRANGER), None)
    first, second = invoke(list_units, event), invoke(list_units, event)
    assert re.fullmatch(r"[0-9a-f]{32}", first.headers["x-request-id"])
    assert first.body["requestId"] == first.headers["x-request-id"]
    assert second.headers["x-request-id"] != first.headers["x-request-id"]


def test_a_client_cannot_choose_the_request_id(list_units, fleet):
    event = with_request_id(list_units_event("node-a", BROKER), "req-real")
    event["headers"]["x-request-id"] = "forged"
    assert invoke(list_units, event).headers["x-request-id"] == "req-real"


def test_404s_differ_only_in_their_request_id(list_units, fleet):
    unknown = invoke(list_units, with_request_id(list_units_event("nope", BROKER), "r-1"))
    hidden = invoke(list_units, with_request_id(list_units_event("node-a", STRANGER), "r-2"))
    assert unknown.status == hidden.status == 404
    assert unknown.headers | {"x-request-id": "r"} == hidden.headers | {"x-request-id": "r"}
    assert unknown.body | {"requestId": "r"} == hidden.body | {"requestId": "r"}


def test_every_log_line_of_the_request_carries_its_id(reclaim, fleet):
    written = io.StringIO()
    handler = logging.StreamHandler(written)
    handler.setFormatter(logger.registered_formatter)
    logger.addHandler(handler)
    try:
        event = with_request_id(reclaim_event("node-a", "res-1", ONE, BROKER), "req-log-1")
        assert invoke(reclaim, event).status == 200
    finally:
        logger.removeHandler(handler)
    logged = [json.loads(line) for line in written.getvalue().splitlines()]
    assert "reclaim committed" in [line["message"] for line in logged]
    assert {line.get("correlation_id") for line in logged} == {"req-log-1"}


# --- Retry-After ---------------------------------------------------------------------------


def test_a_503_says_when_to_retry(list_units, fleet):
    def unreachable(_params: dict[str, Any]) -> None:
        raise EndpointConnectionError(endpoint_url="https://dynamodb.test")

    with on_call(clients.dynamodb(), "Query", before=unreachable):
        result = invoke(list_units, list_units_event("node-a", BROKER))
    assert (result.status, result.body["code"]) == (503, "internal")
    assert int(result.headers["retry-after"]) >= 1


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("ServiceUnavailable", 503),  # what make soak's fault proxy answers for a while
        ("InternalServerError", 500),
        ("ProvisionedThroughputExceededException", 400),
        ("ThrottlingException", 400),
    ],
)
def test_aws_answering_it_cannot_serve_now_is_a_503_that_says_when_to_retry(
    list_units, fleet, code, status
):
    """DynamoDB's own 5xx or throttling, still so after the client's tries: an outage, as
    when it does not answer (a 500, without ``Retry-After``, until a soak made it)."""

    def refused(_params: dict[str, Any]) -> None:
        error = {"Code": code, "Message": "not now"}
        raise ClientError({"Error": error, "ResponseMetadata": {"HTTPStatusCode": status}}, "Query")

    with on_call(clients.dynamodb(), "Query", before=refused):
        result = invoke(list_units, list_units_event("node-a", BROKER))
    assert (result.status, result.body["code"]) == (503, "internal")
    assert int(result.headers["retry-after"]) >= 1


def test_any_other_aws_refusal_that_reaches_the_resolver_is_a_500(list_units, fleet):
    def invalid(_params: dict[str, Any]) -> None:
        error = {"Code": "ValidationException", "Message": "no such index"}
        raise ClientError({"Error": error, "ResponseMetadata": {"HTTPStatusCode": 400}}, "Query")

    with on_call(clients.dynamodb(), "Query", before=invalid):
        result = invoke(list_units, list_units_event("node-a", BROKER))
    assert (result.status, result.body["code"]) == (500, "internal")
    assert "retry-after" not in result.headers


def test_a_conflict_says_when_to_retry_and_a_decision_does_not(reclaim, fleet, aws):
    def lost(_params: dict[str, Any]) -> None:
        raise ClientError(
            {
                "Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
                "CancellationReasons": [{"Code": "None"}, {"Code": "TransactionConflict"}],
            },
            "TransactWriteItems",
        )

    with on_call(clients.dynamodb(), "TransactWriteItems", before=lost):
        conflict = invoke(reclaim, reclaim_event("node-a", "res-1", ONE, BROKER))
    assert (conflict.status, conflict.body["code"]) == (409, "conflict")
    assert int(conflict.headers["retry-after"]) >= 1
    state.set_reservation_status(aws, "node-a", "res-1", "cancelled")
    refused = invoke(reclaim, reclaim_event("node-a", "res-1", ONE, BROKER))
    assert (refused.status, refused.body["code"]) == (409, "reservation_not_active")
    assert "retry-after" not in refused.headers
    assert "retry-after" not in invoke(reclaim, reclaim_event("x", "y", ONE, None)).headers


# --- Idempotent-Replayed -------------------------------------------------------------------


def test_a_replay_is_marked_and_otherwise_the_first_answer(load_fleet):
    load_fleet(f.fleet([f.node("node-a", [f.unit("0000:06:00.0")], [])], extra_keys=WRITERS))
    create = load_function("create_reservation")
    body = {"unitIds": ["0000:06:00.0"], "allowedOrgIds": ["org-x"], "reason": "marked"}
    first = invoke(create, with_request_id(create_event("node-a", body, OWNER, "k-1"), "r-1"))
    again = invoke(create, with_request_id(create_event("node-a", body, OWNER, "k-1"), "r-2"))
    assert first.status == again.status == 201
    assert "idempotent-replayed" not in first.headers
    assert again.headers["idempotent-replayed"] == "true"
    assert again.body_text == first.body_text
    assert again.headers["location"] == first.headers["location"]
    assert again.headers["x-request-id"] == "r-2"  # the response's own id, not the first's


def test_a_kept_refusal_is_replayed_with_the_first_requests_id(reclaim, fleet, aws):
    state.set_reservation_status(aws, "node-a", "res-1", "cancelled")
    first = invoke(
        reclaim, with_request_id(reclaim_event("node-a", "res-1", ONE, BROKER, "k"), "a")
    )
    again = invoke(
        reclaim, with_request_id(reclaim_event("node-a", "res-1", ONE, BROKER, "k"), "b")
    )
    assert (first.status, first.body["code"]) == (409, "reservation_not_active")
    assert (again.status, again.body_text) == (first.status, first.body_text)
    assert again.body["requestId"] == "a"
    assert again.headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in first.headers


# --- 415 unsupported_media_type --------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    ["application/json", "application/json; charset=utf-8", "Application/JSON;charset=UTF-8", None],
)
def test_json_with_any_charset_or_no_header_is_read_as_json(reclaim, fleet, content_type):
    event = declared(reclaim_event("node-a", "res-1", ONE, BROKER), content_type)
    assert invoke(reclaim, event).status == 200


@pytest.mark.parametrize(
    "content_type",
    ["application/x-www-form-urlencoded", "text/plain", "application/xml", "multipart/form-data"],
)
def test_a_body_declared_as_anything_else_is_415_and_does_nothing(
    reclaim, fleet, aws, content_type
):
    before = state.whole_table(aws)
    event = declared(reclaim_event("node-a", "res-1", ONE, BROKER), content_type)
    result = invoke(reclaim, event)
    assert (result.status, result.body["code"]) == (415, "unsupported_media_type")
    assert result.body["details"] == [
        {"field": "header.Content-Type", "problem": "must be application/json"}
    ]
    assert state.whole_table(aws) == before


def test_the_415_comes_after_the_key_and_the_404(reclaim, fleet):
    def form(node: str, authorization: str | None) -> int:
        event = reclaim_event(node, "res-1", "unitIds=0000:04:00.0", authorization)
        return invoke(reclaim, declared(event, "application/x-www-form-urlencoded")).status

    assert form("node-a", None) == 401
    assert form("node-a", STRANGER) == 404  # not allowed on the node: nothing revealed
    assert form("bad id!", BROKER) == 404  # a malformed path id
    assert form("node-a", BROKER) == 415


def test_a_415_is_not_kept_by_the_key(reclaim, fleet):
    event = reclaim_event("node-a", "res-1", ONE, BROKER, "k-415")
    assert invoke(reclaim, declared(event, "text/plain")).status == 415
    assert invoke(reclaim, event).status == 200  # the same key then acts
