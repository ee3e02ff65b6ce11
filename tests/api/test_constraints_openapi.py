"""The OpenAPI document declares the contract's constraints on every operation: path ids with
the id pattern, the Idempotency-Key's length and printable characters, ``limit`` an integer
from 1 to 100, each list filter a comma-separated list of its enum, every query parameter
allowed empty (absent), every enum field an enum, every time a ``date-time``."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from devstack.openapi import SPEC
from reservations import endpoints
from reservations.kernel.http import routes
from reservations.kernel.ids import RESOURCE_ID
from tests.support.bodies import resolved

DOCUMENT: dict[str, Any] = json.loads(SPEC.read_text())
SCHEMAS: dict[str, Any] = DOCUMENT["components"]["schemas"]
TIME = re.compile(r"(At|^time|^after)$")


def _parameters(route: routes.ApiRoute) -> list[dict[str, Any]]:
    parameters: list[dict[str, Any]] = DOCUMENT["paths"][route.path][route.method.lower()].get(
        "parameters", []
    )
    return parameters


@pytest.mark.parametrize("route", endpoints.ALL, ids=lambda route: route.operation_id)
def test_every_parameter_of_an_operation_declares_its_constraints(route):
    parameters = _parameters(route)
    path_ids = [p for p in parameters if p["in"] == "path"]
    assert [p["name"] for p in path_ids] == list(route.path_ids)
    for parameter in path_ids:
        assert parameter["schema"] == {"type": "string", "pattern": RESOURCE_ID}
    headers = {p["name"].lower(): p for p in parameters if p["in"] == "header"}
    expected = [
        name
        for name, declared in (
            ("idempotency-key", route.keyed),
            ("if-match", route.if_match),
            ("if-none-match", route.if_none_match),
        )
        if declared
    ]
    assert list(headers) == expected
    if "idempotency-key" in headers:
        schema = headers["idempotency-key"]["schema"]
        assert (schema["minLength"], schema["maxLength"]) == (1, 255)
    for name in ("if-match", "if-none-match"):
        if name in headers:
            schema = headers[name]["schema"]
            assert (schema["type"], schema["minLength"], schema["maxLength"]) == ("string", 1, 4096)
    for parameter in (p for p in parameters if p["in"] == "query"):
        assert parameter["allowEmptyValue"] is True, (route.operation_id, parameter["name"])
        schema = parameter["schema"]
        if parameter["name"] == "limit":
            assert schema == {"type": "integer", "minimum": 1, "maximum": 100, "default": 50}
        if parameter["name"] in ("status", "state", "types"):
            assert (parameter["style"], parameter["explode"]) == ("form", False)
            assert schema["type"] == "array"
            assert schema["items"]["enum"], parameter["name"]


def test_the_idempotency_key_is_1_to_255_printable_characters():
    [key] = [p for p in _parameters(endpoints.RECLAIM) if p["name"] == "idempotency-key"]
    pattern = re.compile(key["schema"]["pattern"])
    for good in ("a", "reclaim-2026-11-29-1", "a b", "~" * 255, "{json: 'ok'}"):
        assert pattern.search(good), good
    for bad in ("\x7f", "é", "tab\there", " leading", "trailing "):
        assert not pattern.search(bad), bad  # HTTP trims a value's outer spaces


def test_the_list_filters_name_exactly_what_each_list_reads():
    def enum(route: routes.ApiRoute, name: str) -> list[str]:
        [parameter] = [p for p in _parameters(route) if p["name"] == name]
        values: list[str] = parameter["schema"]["items"]["enum"]
        return values

    assert enum(endpoints.LIST_RESERVATIONS, "status") == [
        "pending", "active", "expired", "cancelled", "needs-review",
    ]  # fmt: skip
    assert enum(endpoints.LIST_WORKLOADS, "state") == ["running", "terminating", "waiting"]
    assert "workload.termination_requested" in enum(endpoints.ORG_EVENTS, "types")


def _properties(schema: dict[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = schema.get("properties", {})
    return properties


def _branches(field: dict[str, Any]) -> list[dict[str, Any]]:
    """A field's schema, or each of its anyOf's but null, references followed."""
    options = field.get("anyOf", [field])
    return [resolved(DOCUMENT, option) for option in options if option.get("type") != "null"]


def test_every_time_is_a_date_time():
    times = 0
    for name, schema in SCHEMAS.items():
        for field, declared in _properties(schema).items():
            if TIME.search(field):
                times += 1
                for branch in _branches(declared):
                    assert branch.get("format") == "date-time", (name, field)
    assert times >= 20


ENUMS = {
    ("Reservation", "status"), ("ReclaimResult", "status"), ("Unit", "state"),
    ("Workload", "kind"), ("Workload", "tier"), ("Workload", "state"),
    ("PlaceWorkloadRequest", "kind"), ("PlaceWorkloadRequest", "tier"),
    ("DeliveryView", "type"), ("DeliveryView", "state"), ("SubscriptionView", "status"),
    ("SubscriptionView", "types"), ("SubscribeRequest", "types"), ("Event", "type"),
    ("Error", "code"),
}  # fmt: skip


@pytest.mark.parametrize(("name", "field"), sorted(ENUMS))
def test_every_enum_field_is_an_enum(name, field):
    for branch in _branches(_properties(SCHEMAS[name])[field]):
        values = branch["items"] if branch.get("type") == "array" else branch
        assert resolved(DOCUMENT, values)["enum"], (name, field)
