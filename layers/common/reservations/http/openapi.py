"""What the routes declare for the generated OpenAPI document (docs/openapi.json)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from reservations.logic.event_feeds import TYPES_PATTERN
from reservations.logic.read_reservations import LIMIT_PATTERN
from reservations.models.api import ErrorBody
from reservations.models.errors import documented_errors
from reservations.models.requests import CapacityRequest
from reservations.models.times import RFC3339
from reservations.rules.cursors import MAX_CURSOR


def responses(
    success: Any, description: str, *errors: int, status: int = 200
) -> dict[int, dict[str, Any]]:
    """The route's documented responses: ``success`` on ``status`` (None: no body, as a 204
    has), ErrorBody on each error."""
    documented: dict[int, dict[str, Any]] = {status: {"description": description}}
    if success is not None:
        documented[status]["content"] = {"application/json": {"model": success}}
    for error in (*errors, 500, 503):
        documented[error] = {
            "description": documented_errors(error),
            "content": {"application/json": {"model": ErrorBody}},
        }
    return documented


def reclaim_request_body() -> dict[str, Any]:
    """The reclaim body, parsed by hand after authentication (so 401 comes before 400)."""
    return request_body(CapacityRequest)


def request_body(model: type[BaseModel], required: bool = True) -> dict[str, Any]:
    """A body the function parses by hand after authentication (so 401 comes before 400)."""
    return {
        "requestBody": {
            "required": required,
            "content": {
                "application/json": {
                    "schema": _inlined(model.model_json_schema(by_alias=True, mode="validation"))
                }
            },
        }
    }


def _inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """Nested models inlined: pydantic's ``#/$defs/...`` would resolve against the OpenAPI
    document's root, where they are not."""
    definitions = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            reference = node.get("$ref", "")
            if reference.startswith("#/$defs/"):
                return resolve(definitions[reference.removeprefix("#/$defs/")])
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    resolved: dict[str, Any] = resolve(schema)
    return resolved


# An event feed's query parameters: what the logic accepts (a part given empty is absent).
_FEED_PARAMETERS: dict[str, tuple[str, dict[str, Any]]] = {
    "types": ("comma-separated event types", {"pattern": TYPES_PATTERN}),
    "after": (
        "RFC 3339 with an offset: only events after this time",
        {"pattern": "^$|" + RFC3339},
    ),
    "limit": ("1-100, default 50", {"pattern": LIMIT_PATTERN}),
    "cursor": (
        "nextCursor of the previous page, unchanged (any other is a 400)",
        {"maxLength": MAX_CURSOR},
    ),
}


def feed_parameter(name: str) -> dict[str, Any]:
    """The ``Query(...)`` arguments of an event feed's parameter: a string (never null: an
    absent one is not sent) and its description."""
    description, rules = _FEED_PARAMETERS[name]
    return {
        "description": description,
        "json_schema_extra": {"anyOf": [{"type": "string", **rules}]},
    }
