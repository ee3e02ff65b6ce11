"""The spec and the behaviour agree on what they allow. Values are drawn for the list's
query parameters and for the node body's integer fields, the committed docs/openapi.json's
own schemas say whether each is allowed (JSON Schema 2020-12, as OpenAPI 3.1 has it), and the
real handlers must answer accordingly: never a 400 for a value the spec allows (``status=``
given empty, ``"topologyGen": 1.0``), a 400 naming the field for one it does not (``1.5``)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from moto import mock_aws

from devstack import fleet_documents as f
from devstack import template
from devstack.api_events import list_event, node_event
from devstack.fleets import load_fleet
from devstack.functions import invoke, load_function
from devstack.openapi import SPEC
from reservations.kernel.aws import clients
from reservations.nodes.models.partition import ReservationStatus
from tests.support.query_parameters import allows

pytestmark = pytest.mark.moto

DOCUMENT = json.loads(SPEC.read_text())
OWNER = "Bearer vl_local_test_owner"
OPERATOR = "Bearer vl_local_test_nodes"
UNIT = "0000:04:00.0"
STATUSES = [status.value for status in ReservationStatus]
EXAMPLES = settings(
    max_examples=int(os.environ.get("AGREEMENT_EXAMPLES", "120")),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def _operation(path: str, method: str) -> dict[str, Any]:
    return dict(DOCUMENT["paths"][path][method])


def _allows(schema: dict[str, Any], value: Any) -> bool:
    """Whether ``schema`` (its references into the document's components followed) allows
    ``value``."""
    whole = {**schema, "components": DOCUMENT["components"]}
    return bool(Draft202012Validator(whole).is_valid(value))


@pytest.fixture(scope="module")
def world() -> Iterator[dict[str, Any]]:
    """moto with node-a (one unit, three reservations) and node-b (one unit), for the module."""
    saved = dict(os.environ)
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                      AWS_DEFAULT_REGION="us-east-1")  # fmt: skip
    os.environ.pop("AWS_ENDPOINT_URL", None)
    with mock_aws():
        clients.reset()
        template.create_tables(boto3.client("dynamodb"))
        template.create_queues(boto3.client("sqs"))
        reservations = [f.reservation(f"res-{n}", [UNIT], status="cancelled") for n in range(3)]
        nodes_key = {
            "key": "vl_local_test_nodes",
            "orgId": "org-platform",
            "permissions": ["node.write"],
        }
        nodes = [f.node("node-a", [f.unit(UNIT)], reservations), f.node("node-b", [f.unit(UNIT)])]
        fleet = f.fleet(nodes, extra_keys=[nodes_key])
        load_fleet(fleet, boto3.client("dynamodb"), boto3.client("sqs"))
        yield {name: load_function(name) for name in ("list_reservations", "put_node")}
        clients.reset()
    os.environ.clear()
    os.environ.update(saved)


# --- the list's query parameters ---------------------------------------------------------------

EDGES = "|1|9|50|99|100|0|101|007|1.0|1e2|-1| |active|needs-review| active , cancelled |active,"
QUERY_VALUES = st.one_of(
    st.sampled_from([*EDGES.split("|"), "active,,pending", "Active", "live"]),
    st.text(alphabet="0123456789.,- acdeilnprstvwx", max_size=24),
    st.lists(st.sampled_from(STATUSES), min_size=1, max_size=4).map(",".join),
)


def _query_parameter(name: str) -> dict[str, Any]:
    operation = _operation("/v1/nodes/{nodeId}/reservations", "get")
    [parameter] = [p for p in operation["parameters"] if p["name"] == name]
    return dict(parameter)


def _query_allows(name: str, text: str, lenient: bool = False) -> bool:
    return allows(_query_parameter(name), text, lenient)


@pytest.mark.parametrize("name", ["limit", "status"])
@EXAMPLES
@given(value=QUERY_VALUES)
def test_a_query_parameter_is_refused_exactly_when_the_spec_does_not_allow_it(world, name, value):
    """Exactly, but for spaces around a list's items: the document declares the canonical
    list, the API reads one with spaces too (it is lenient in what it accepts)."""
    result = invoke(world["list_reservations"], list_event("node-a", OWNER, {name: value}))
    if _query_allows(name, value):
        assert result.status == 200, (name, value, result.body)
    if _query_allows(name, value, lenient=True):
        assert result.status == 200, (name, value, result.body)
    else:
        assert result.status == 400, (name, value, result.body)
        assert [d["field"] for d in result.body["details"]] == [name]


def test_limit_is_an_integer_from_1_to_100_and_status_a_list_of_statuses():
    limit, status = _query_parameter("limit"), _query_parameter("status")
    assert limit["schema"] == {"type": "integer", "minimum": 1, "maximum": 100, "default": 50}
    assert status["schema"] == {"type": "array", "items": {"type": "string", "enum": STATUSES}}
    assert _query_allows("status", "active,needs-review")
    assert not _query_allows("status", " active")  # the canonical list; the API reads it too
    assert not _query_allows("limit", "007")


def test_every_query_parameter_given_empty_is_allowed_and_absent(world):
    whole = invoke(world["list_reservations"], list_event("node-a", OWNER))
    for name in ("limit", "cursor", "status"):
        assert _query_allows(name, "")
    empty = invoke(world["list_reservations"],
                   list_event("node-a", OWNER, {"limit": "", "cursor": "", "status": ""}))  # fmt: skip
    assert (empty.status, empty.body) == (200, whole.body)


# --- the node body's integers --------------------------------------------------------------------

NUMBER_EDGES: list[Any] = [1, 1.0, 2.0, 1.5, 0, 0.0, -0.0, -1.0, 1e20, 1024.0, 1024.5]
NUMBERS = st.one_of(
    st.sampled_from([*NUMBER_EDGES, float(2**53 - 1), float(2**53), True, "1", None]),
    st.integers(min_value=-3, max_value=2**53 + 3),
    st.integers(min_value=-3, max_value=2000).map(float),
    st.floats(allow_nan=False, allow_infinity=False),
)


def _node_body(field: str, value: Any) -> dict[str, Any]:
    unit = f.unit(UNIT)
    body: dict[str, Any] = {"ownerOrgId": "org-acme", "topologyGen": 1, "units": [unit]}
    if field == "topologyGen":
        body["topologyGen"] = value
    else:
        unit["sellableGpus"] = value
    return body


@pytest.mark.parametrize(("field", "named"), [("topologyGen", "topologyGen"),
                                              ("sellableGpus", "units[0].sellableGpus")])  # fmt: skip
@EXAMPLES
@given(value=NUMBERS)
def test_a_node_integer_is_refused_exactly_when_the_spec_does_not_allow_it(
    world, field, named, value
):
    body = _node_body(field, value)
    schema = _operation("/v1/nodes/{nodeId}", "put")["requestBody"]["content"]
    result = invoke(world["put_node"], node_event("node-a", body, OPERATOR))
    if _allows(schema["application/json"]["schema"], json.loads(json.dumps(body))):
        assert result.status != 400, (field, value, result.body)  # 200, or 409 stale
    else:
        assert result.status == 400, (field, value, result.body)
        assert [d["field"] for d in result.body["details"]] == [named]


def test_an_integral_float_is_the_integer_and_a_fraction_is_refused(world):
    put = world["put_node"]
    assert invoke(put, node_event("node-b", _node_body("topologyGen", 5.0), OPERATOR)).status == 200
    again = invoke(put, node_event("node-b", _node_body("topologyGen", 5), OPERATOR))
    assert (again.status, again.body["topologyGen"]) == (200, 5)  # the same generation
    refused = invoke(put, node_event("node-b", _node_body("topologyGen", 5.5), OPERATOR))
    assert refused.status == 400
    assert refused.body["details"][0]["field"] == "topologyGen"
