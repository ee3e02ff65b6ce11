"""The answers' schemas say what the real handlers answer: a field the API leaves out is
optional and not nullable (no response sends ``null``, but where the contract says so: a
reservation's ``lending``), a field it always sends is required. A session over the
keys-only fleet (every API function behind API Gateway's routing, moto behind them) calls
every operation; each answer must be valid by the schema the document gives its status
(formats checked), and no other answer's field is ``null``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import httpx
import pytest
from jsonschema import Draft202012Validator

from devstack import openapi
from devstack.fleets import NODE_QUEUE_PREFIX
from devstack.functions import load_function
from reservations.kernel.aws import clients
from reservations.kernel.wire import SHOWN_NULLS
from reservations_tools.fleet.loader import local_dead_letter_arn
from tests.support.wsgi import LambdaApi

pytestmark = pytest.mark.moto

DOCUMENT: dict[str, Any] = json.loads(openapi.SPEC.read_text())
SCHEMAS: dict[str, Any] = DOCUMENT["components"]["schemas"]
U = ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0"]
NODE = "/v1/nodes/node-n1"


def _null_fields(value: Any) -> set[str]:
    """The names of the fields sent as ``null``, anywhere in an answer."""
    if isinstance(value, list):
        return set().union(*(_null_fields(item) for item in value))
    if isinstance(value, dict):
        nulls = {name for name, item in value.items() if item is None}
        return nulls.union(*(_null_fields(item) for item in value.values()))
    return set()


def _nullable(schema: dict[str, Any]) -> bool:
    options = schema.get("anyOf", []) + schema.get("oneOf", [])
    return schema.get("type") == "null" or any(_nullable(option) for option in options)


def _answer_schemas() -> set[str]:
    """The schemas the answers name, and every schema they hold."""
    named: set[str] = set()
    for operations in DOCUMENT["paths"].values():
        for operation in operations.values():
            for response in operation["responses"].values():
                named |= _referred(response.get("content", {}))
    grown = True
    while grown:
        held = set().union(*(_referred(SCHEMAS[name]) for name in named)) - named
        grown, named = bool(held), named | held
    return named


def _referred(part: Any) -> set[str]:
    text = json.dumps(part)
    return {name for name in SCHEMAS if f'"#/components/schemas/{name}"' in text}


def test_no_field_of_an_answer_is_nullable():
    answers = _answer_schemas()
    assert {"Reservation", "Workload", "WorkloadTermination", "Unit", "DeliveryView"} <= answers
    for name in answers:
        for field, schema in SCHEMAS[name].get("properties", {}).items():
            # but where the contract says null: a reservation's lending policy
            assert _nullable(schema) is (field in SHOWN_NULLS), (name, field)


@pytest.fixture
def api(load_fleet: Any, aws: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[httpx.Client]:
    monkeypatch.setenv("NODE_QUEUE_PREFIX", NODE_QUEUE_PREFIX)
    monkeypatch.setenv("NODE_DEAD_LETTER_QUEUE_ARN", local_dead_letter_arn(boto3.client("sqs")))
    clients.reset()
    fleet = json.loads(open("fleets/keys-only.json").read())  # noqa: SIM115
    fleet["apiKeys"].append({"key": "vl_local_only_watcher", "orgId": "org-broker",
                             "permissions": ["events.read"]})  # fmt: skip
    load_fleet(fleet)
    functions = {name: load_function(name) for name in openapi.API_FUNCTIONS}
    app = LambdaApi(functions, openapi.render(openapi.generate()))
    with httpx.Client(transport=httpx.WSGITransport(app=app), base_url="http://api.test") as api:
        yield api


class Session:
    """Calls by key; each answer checked against the document; what was seen, kept."""

    def __init__(self, api: httpx.Client) -> None:
        self.api, self.seen = api, []

    def call(self, key: str, method: str, path: str, template: str, **kwargs: Any) -> Any:
        headers = {"Authorization": f"Bearer vl_local_only_{key}"}
        answer = self.api.request(method, path, headers=headers, **kwargs)
        responses = DOCUMENT["paths"][template][method.lower()]["responses"]
        assert str(answer.status_code) in responses, (method, path, answer.text)
        self.seen.append((method, template, answer.status_code))
        content = responses[str(answer.status_code)].get("content")
        if content is None:
            assert not answer.content
            return None
        body = answer.json()
        schema = {**content["application/json"]["schema"], "components": DOCUMENT["components"]}
        checker = Draft202012Validator.FORMAT_CHECKER
        problems = [e.message for e in Draft202012Validator(schema, format_checker=checker)
                    .iter_errors(body)]  # fmt: skip
        assert problems == [], (method, path, body)
        assert _null_fields(body) <= SHOWN_NULLS, (method, path, body)
        return body


def _unit(unit_id: str) -> dict[str, Any]:
    return {"id": unit_id, "allocClass": "vfio-group", "gpuModelId": "nvidia-h100-sxm5-80gb",
            "sellableGpus": 1, "sellable": True}  # fmt: skip


def test_every_operation_answers_as_its_schema_says(api):
    s, r = Session(api), "/v1/nodes/{nodeId}/reservations"
    node = {"ownerOrgId": "org-acme", "topologyGen": 1, "units": [_unit(u) for u in U]}
    s.call("operator", "PUT", NODE, "/v1/nodes/{nodeId}", json=node)
    s.call("owner", "GET", NODE, "/v1/nodes/{nodeId}")
    made = s.call("owner", "POST", f"{NODE}/reservations", r, json={
        "unitIds": U[:2], "allowedOrgIds": ["org-lab"], "managingOrgIds": ["org-broker"]})  # fmt: skip
    one, res = f"{NODE}/reservations/{made['id']}", r + "/{reservationId}"
    assert "endsAt" not in made  # left out, not null
    assert "contractRef" not in made
    s.call("broker", "POST", one + "/release", res + "/release", json={"unitIds": [U[0]]})
    lent = s.call("broker", "PUT", one + "/lending", res + "/lending",
                  json={"auto": True, "noticeSeconds": 60})  # fmt: skip
    assert lent["lending"]["noticeSeconds"] == 60
    s.call("broker", "DELETE", one + "/lending", res + "/lending")
    s.call("broker", "POST", one + "/reclaim", res + "/reclaim",
           json={"unitIds": [U[0]], "dryRun": True})  # fmt: skip
    place = {"id": "vm-1", "kind": "vm", "tier": "spot", "orgId": "org-spotbuyer",
             "unitIds": [U[0]]}  # fmt: skip
    s.call("broker", "POST", one + "/release", res + "/release", json={"unitIds": [U[0]]})
    s.call("operator", "POST", f"{NODE}/workloads", "/v1/nodes/{nodeId}/workloads", json=place)
    s.call("broker", "POST", one + "/reclaim", res + "/reclaim", json={"unitIds": [U[0]]})
    w = "/v1/nodes/{nodeId}/workloads/{workloadId}"
    terminating = s.call("operator", "GET", f"{NODE}/workloads/vm-1", w)
    termination = terminating["termination"]
    assert set(termination) == {"id", "reservationId", "requestedAt", "terminateAt"}
    assert termination["terminateAt"] == termination["requestedAt"]  # no notice: due at once
    s.call("owner", "GET", f"{NODE}/workloads", "/v1/nodes/{nodeId}/workloads")
    s.call("broker", "GET", f"{NODE}/reservations/units", r + "/units")
    s.call("owner", "GET", one, res)
    s.call("owner", "GET", f"{NODE}/reservations", r, params={"status": "active,cancelled"})
    s.call("owner", "GET", f"{NODE}/events", "/v1/nodes/{nodeId}/events")
    s.call("owner", "POST", one + "/cancel", res + "/cancel", json={"reason": "done"})
    s.call("operator", "DELETE", f"{NODE}/workloads/vm-1", w)
    s.call("owner", "GET", one, res)  # from the node's history
    _review(s)
    _webhooks(s)
    s.call("nobody", "GET", f"{NODE}/reservations/units", r + "/units")  # an error: 401
    answered = {(method, template) for method, template, _ in s.seen}
    assert len(answered) == 24  # every operation but the retry of a failed delivery


def _review(s: Session) -> None:
    """A reservation whose unit the node's update changed, re-affirmed."""
    r = "/v1/nodes/{nodeId}/reservations"
    made = s.call("owner", "POST", f"{NODE}/reservations", r,
                  json={"unitIds": [U[2]], "allowedOrgIds": ["org-lab"]})  # fmt: skip
    units = [_unit(U[0]), _unit(U[1]), {**_unit(U[2]), "sellableGpus": 2}]
    node = {"ownerOrgId": "org-acme", "topologyGen": 2, "units": units}
    s.call("operator", "PUT", NODE, "/v1/nodes/{nodeId}", json=node)
    path = f"{NODE}/reservations/{made['id']}/reaffirm"
    affirmed = s.call("operator", "POST", path, r + "/{reservationId}/reaffirm")
    assert affirmed["topologyGen"] == 2


def _webhooks(s: Session) -> None:
    hook = s.call("watcher", "POST", "/v1/webhooks", "/v1/webhooks",
                  json={"url": "https://hooks.example.com/r"})  # fmt: skip
    one, template = f"/v1/webhooks/{hook['id']}", "/v1/webhooks/{subscriptionId}"
    s.call("watcher", "GET", one, template)
    s.call("watcher", "GET", "/v1/webhooks", "/v1/webhooks")
    s.call("watcher", "POST", one + "/rotate-secret", template + "/rotate-secret")
    s.call("watcher", "GET", one + "/deliveries", template + "/deliveries")
    s.call("watcher", "GET", "/v1/events", "/v1/events")
    s.call("watcher", "DELETE", one, template)
