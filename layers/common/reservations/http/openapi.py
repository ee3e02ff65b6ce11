"""What the routes declare for the generated OpenAPI document (docs/openapi.json)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from reservations.models.api import ErrorBody
from reservations.models.errors import documented_errors
from reservations.models.requests import CapacityRequest


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
