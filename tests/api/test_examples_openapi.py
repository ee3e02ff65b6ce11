"""Every schema of the OpenAPI document (each request and response body, and each schema
they hold) has examples, and each example is valid by its own schema (JSON Schema 2020-12,
as OpenAPI 3.1 has it, formats checked): a client developer or a fuzzer may take them as
they are."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from devstack.openapi import SPEC

DOCUMENT: dict[str, Any] = json.loads(SPEC.read_text())
SCHEMAS: dict[str, Any] = DOCUMENT["components"]["schemas"]


def _errors(name: str, example: Any) -> list[str]:
    schema = {**SCHEMAS[name], "components": DOCUMENT["components"]}
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    return [
        f"{list(error.absolute_path)}: {error.message}" for error in validator.iter_errors(example)
    ]


def _bodies() -> set[str]:
    """The schemas the operations' bodies name (requests and answers)."""
    named = set()
    for operations in DOCUMENT["paths"].values():
        for operation in operations.values():
            contents = [operation.get("requestBody", {}).get("content", {})]
            contents += [
                response.get("content", {}) for response in operation["responses"].values()
            ]
            for content in contents:
                text = json.dumps(content)
                named |= {name for name in SCHEMAS if f'"#/components/schemas/{name}"' in text}
    return named


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_each_schema_has_examples_valid_by_itself(name):
    examples = SCHEMAS[name].get("examples")
    assert examples, f"{name} has no example"
    for example in examples:
        assert _errors(name, example) == [], (name, example)


def test_every_body_of_every_operation_is_a_schema_with_examples():
    bodies = _bodies()
    assert {"Reservation", "ReservationPage", "UnitsRequest", "Error", "EventPage"} <= bodies
    assert all(SCHEMAS[name].get("examples") for name in bodies)


def test_an_example_that_breaks_its_schema_is_caught():
    reservation = SCHEMAS["Reservation"]["examples"][0]
    assert _errors("Reservation", {**reservation, "status": "live"})
    assert _errors("Reservation", {**reservation, "createdAt": "yesterday"})
    assert _errors("Reservation", {key: v for key, v in reservation.items() if key != "id"})
