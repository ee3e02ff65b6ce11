"""A response's optional field is absent, never null, and its schema says so: the null
option is dropped from its ``anyOf`` (one type left: that type; two or more: ``anyOf`` of
them), and a None default with it; a real default stays."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from reservations.kernel.http.resolver import serialize
from reservations.kernel.wire import absent_not_null

pytestmark = pytest.mark.disable_socket

NULL = {"type": "null"}


def test_an_optional_field_of_one_type_is_that_type_without_its_none_default() -> None:
    schema: dict[str, Any] = {
        "properties": {"note": {"anyOf": [{"type": "string"}, NULL], "default": None}}
    }
    absent_not_null(schema)
    assert schema == {"properties": {"note": {"type": "string"}}}


def test_an_optional_field_of_two_types_stays_any_of_the_two() -> None:
    options = [{"type": "string"}, {"type": "integer"}, NULL]
    schema: dict[str, Any] = {
        "properties": {"size": {"anyOf": options, "default": None, "title": "Size"}}
    }
    absent_not_null(schema)
    assert schema == {
        "properties": {
            "size": {"anyOf": [{"type": "string"}, {"type": "integer"}], "title": "Size"}
        }
    }


def test_a_default_other_than_none_is_kept() -> None:
    schema: dict[str, Any] = {
        "properties": {"tier": {"anyOf": [{"type": "string"}, NULL], "default": "spot"}}
    }
    absent_not_null(schema)
    assert schema == {"properties": {"tier": {"type": "string", "default": "spot"}}}


def test_a_nullable_field_without_a_default_gets_none() -> None:
    schema: dict[str, Any] = {"properties": {"id": {"anyOf": [{"type": "string"}, NULL]}}}
    absent_not_null(schema)
    assert schema == {"properties": {"id": {"type": "string"}}}


def test_fields_that_cannot_be_null_are_left_as_they_are() -> None:
    fields: dict[str, dict[str, Any]] = {
        "id": {"type": "string"},
        "either": {"anyOf": [{"type": "string"}, {"type": "integer"}], "default": None},
    }
    schema: dict[str, Any] = {"properties": {name: dict(f) for name, f in fields.items()}}
    absent_not_null(schema)
    assert schema == {"properties": fields}


class _Shape(BaseModel):
    model_config = ConfigDict(json_schema_extra=absent_not_null)

    name: str
    count: int | str | None = None
    label: str | None = "none given"


def test_a_models_schema_has_no_null_and_keeps_its_real_defaults() -> None:
    properties = _Shape.model_json_schema()["properties"]
    assert properties["name"] == {"title": "Name", "type": "string"}
    assert properties["count"] == {
        "title": "Count",
        "anyOf": [{"type": "integer"}, {"type": "string"}],
    }
    assert properties["label"] == {"title": "Label", "type": "string", "default": "none given"}


def test_a_response_body_drops_nulls_at_every_level_compact_and_in_utf8() -> None:
    value = {"id": "res-1", "reason": None, "units": [{"id": "0000:04:00.0", "note": None}],
             "contractRef": "caf\u00e9"}  # fmt: skip
    assert (
        serialize(value)
        == '{"id":"res-1","units":[{"id":"0000:04:00.0"}],"contractRef":"caf\u00e9"}'
    )
