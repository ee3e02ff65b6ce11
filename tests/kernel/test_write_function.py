"""A write route's Lambda function as deployed (``functions/api/app.py``, ENDPOINT ``reservations.create_reservation``),
called with API Gateway's event over the in-memory fakes: the Idempotency-Key header reaches
the pipeline, a base64 body is decoded, the declared media type is honoured, and the answer
is the logic's as it rendered it (status, body, Location, the replay mark); and, around any
API function, what its resolver adds (errors, deadlines, a read's answer without nulls)."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest
from botocore.exceptions import EndpointConnectionError

from devstack.api_events import create_event, get_event, node_event
from devstack.functions import FakeContext, load_function
from reservations import endpoints
from reservations.kernel.caller import ApiKey
from reservations.kernel.http import resolver, routes
from reservations.lifecycle.create import CREATE
from tests.support.fakes import FakeClock, FakeTable, ports
from tests.support.use_cases import unit

pytestmark = pytest.mark.disable_socket

FREE = ["0000:0b:00.0", "0000:0c:00.0", "0000:0d:00.0"]
BODY = {"unitIds": FREE[:2], "allowedOrgIds": ["org-lab"]}
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
    monkeypatch.setattr(resolver.api_keys, "load_api_key", lambda _hash: OWNER_KEY)
    resolver.key_cache.clear()
    assert module.function.spec is CREATE  # what the contract tests read its refusals from

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = module.lambda_handler(event, FakeContext())
        return answer

    return invoke


def event(
    body: Any = BODY, key: str | None = None, bearer: str = "vl_local_test_owner"
) -> dict[str, Any]:
    return create_event("node-a", body, f"Bearer {bearer}", key)


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
    # Another key is another request: its own 201.
    second = call(event({**BODY, "unitIds": FREE[2:]}, key="k-2"))
    assert second["statusCode"] == 201
    assert json.loads(second["body"])["id"] == "res-new1"
    # The same key under another API key is another request too.
    elsewhere = call(event(BODY, key="k-2", bearer="vl_local_test_operator"))
    assert elsewhere["statusCode"] == 409  # a create of its own: the units are taken


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


# --- what the resolver answers around the use case ----------------------------------------


def flushed(capfd: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The metrics the invocation flushed (EMF lines on stdout): name -> value."""
    values: dict[str, Any] = {}
    for line in capfd.readouterr().out.splitlines():
        if '"_aws"' in line:
            document = json.loads(line)
            for metric in document["_aws"]["CloudWatchMetrics"][0]["Metrics"]:
                values[metric["Name"]] = document[metric["Name"]]
    return values


def said(caplog: pytest.LogCaptureFixture) -> list[Any]:
    return [r for r in caplog.records if r.name == "reservations"]


def test_a_409_is_counted_and_a_422_is_not(call, store, capfd):
    capfd.readouterr()
    held = call(event({**BODY, "unitIds": ["0000:07:00.0"]}))  # res-1 holds it
    assert held["statusCode"] == 409
    assert flushed(capfd)["Responses409"] == [1.0]
    refused = call(event({**BODY, "unitIds": ["0000:ff:00.0"]}))
    assert refused["statusCode"] == 422
    assert "Responses409" not in flushed(capfd)


def test_aws_not_answering_is_a_503_said_and_counted(call, monkeypatch, capfd, caplog):
    def unreachable(_hash: str) -> None:
        raise EndpointConnectionError(endpoint_url="https://dynamodb.test")

    monkeypatch.setattr(resolver.api_keys, "load_api_key", unreachable)
    caplog.set_level("INFO", logger="reservations")
    capfd.readouterr()
    answer = call(event())
    assert answer["statusCode"] == 503
    assert answer["headers"]["Retry-After"] == "2"
    assert json.loads(answer["body"])["code"] == "internal"
    assert flushed(capfd)["RequestsUnanswered"] == [1.0]
    [line] = said(caplog)
    assert (line.levelname, line.getMessage()) == ("WARNING", "request gave up: AWS did not answer")
    assert "dynamodb.test" in line.why
    assert line.exc_info is None


def test_an_unexpected_error_is_a_500_naming_nothing_internal_logged_with_its_stack(
    call, monkeypatch, caplog
):
    def broken(_hash: str) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(resolver.api_keys, "load_api_key", broken)
    caplog.set_level("INFO", logger="reservations")
    answer = call(event())
    assert answer["statusCode"] == 500
    body = json.loads(answer["body"])
    assert (body["error"], body["code"]) == ("internal error", "internal")
    assert "secret" not in answer["body"]
    [line] = said(caplog)
    assert (line.levelname, line.getMessage()) == ("ERROR", "unhandled error")
    assert line.exc_info is not None


def test_every_answer_carries_the_request_id_api_gateway_gave_or_a_new_one(call):
    given = event()
    given["requestContext"]["requestId"] = "req-given-1"
    refused = call({**given, "headers": {**given["headers"], "authorization": "Bearer x"}})
    assert refused["headers"]["X-Request-Id"] == "req-given-1"
    assert refused["headers"]["WWW-Authenticate"] == "Bearer"
    assert refused["headers"]["Content-Type"] == "application/json"
    assert json.loads(refused["body"])["requestId"] == "req-given-1"
    made = event()
    del made["requestContext"]["requestId"]
    answer = call(made)
    assert answer["statusCode"] == 201
    assert len(answer["headers"]["X-Request-Id"]) == 32
    assert answer["headers"]["X-Request-Id"] != call(made)["headers"]["X-Request-Id"]
    made["requestContext"]["requestId"] = ""  # an empty id is none
    assert len(call(made)["headers"]["X-Request-Id"]) == 32


@dataclass
class Frozen(FakeContext):
    """A context whose remaining time stands still at exactly three seconds."""

    def get_remaining_time_in_millis(self) -> int:
        return 3000


def test_no_aws_try_may_outlast_the_invocations_remaining_time(monkeypatch):
    started: list[float] = []
    monkeypatch.setattr(resolver.clients, "start_request", started.append)
    unsigned = event()
    unsigned["headers"].pop("authorization")  # the 401: no AWS call, the deadline still set
    answer = load_function("create_reservation").lambda_handler(unsigned, Frozen())
    assert answer["statusCode"] == 401
    assert started == [3.0]  # seconds: the remaining 3000 ms


def test_a_reads_answer_leaves_out_every_absent_field_never_null(store, clock, monkeypatch):
    module = load_function("get_reservation")
    module.function.ports = ports(store, clock)
    reader = replace(OWNER_KEY, permissions=frozenset({"reservation.read"}))
    monkeypatch.setattr(resolver.api_keys, "load_api_key", lambda _hash: reader)
    resolver.key_cache.clear()
    answer = module.lambda_handler(get_event("node-a", "res-1", "Bearer vl_x"), FakeContext())
    assert answer["statusCode"] == 200
    assert "reason" not in json.loads(answer["body"])  # res-1 gave none
    # null only where the contract says so: no lending policy
    assert answer["body"].count("null") == 1
    assert json.loads(answer["body"])["lending"] is None
    assert ": " not in answer["body"]  # compact


def at_path(path: str, authorization: str | None) -> dict[str, Any]:
    sent = event()
    sent["rawPath"] = sent["requestContext"]["http"]["path"] = path
    sent["headers"].pop("authorization")
    if authorization:
        sent["headers"]["authorization"] = authorization
    return sent


def test_a_path_id_no_route_takes_is_the_keys_401_first_then_404(call):
    malformed = '/v1/nodes/node"a/reservations'  # no route pattern takes a quote
    assert call(at_path(malformed, None))["statusCode"] == 401
    assert call(at_path(malformed, "Bearer vl_local_test_owner"))["statusCode"] == 404
    # An empty path id is the 404 whatever the key, as deployed: the first segment too.
    assert call(at_path("/v1/nodes//reservations", None))["statusCode"] == 404
    assert call(at_path("//v1/nodes/node-a/reservations", None))["statusCode"] == 404


def operation(route: routes.ApiRoute) -> dict[str, Any]:
    """The route's operation as its own function's resolver documents it."""
    document = json.loads(load_function(route.function).app.get_openapi_json_schema())
    found: dict[str, Any] = document["paths"][route.path][route.method.lower()]
    return found


def test_a_write_function_documents_its_answers_and_whether_its_body_is_required():
    cancel = operation(endpoints.CANCEL)
    assert set(cancel["responses"]) == {
        "200", "400", "401", "404", "409", "412", "415", "422", "429", "500", "503"
    }  # fmt: skip
    assert "if-match" in {p["name"].lower() for p in cancel["parameters"]}
    assert cancel["requestBody"]["required"] is False  # no body: no reason given


def test_the_function_writes_with_the_ports_it_was_built_with():
    """The create function's own reservation ids (``res-`` and 20 characters)."""
    ports_built = load_function("create_reservation").function.ports
    assert re.fullmatch(r"res-[a-z0-9]{20}", ports_built.new_id())


OPERATOR_KEY = ApiKey("key-op", "org-op", frozenset({"node.write"}), True)
NODE_B = {"ownerOrgId": "org-acme", "topologyGen": 1, "units": [
    {"id": FREE[0], "allocClass": "vfio-group", "gpuModelId": "h100", "sellableGpus": 1,
     "sellable": True}]}  # fmt: skip


def test_a_write_route_without_an_idempotency_key_answers(store, clock, monkeypatch):
    module = load_function("put_node")
    module.function.ports = ports(store, clock)
    monkeypatch.setattr(resolver.api_keys, "load_api_key", lambda _hash: OPERATOR_KEY)
    resolver.key_cache.clear()
    answer = module.lambda_handler(node_event("node-b", NODE_B, "Bearer vl_x"), FakeContext())
    assert answer["statusCode"] in (200, 201)
    assert "node-b" in store.nodes
