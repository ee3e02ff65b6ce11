"""Error bodies as tests compare them: without the request's own id (``requestId``), the one
part of an error that differs from request to request."""

from __future__ import annotations

from typing import Any


def unidentified(body: Any) -> Any:
    """``body`` without its ``requestId`` (an error body names the request it answered)."""
    if isinstance(body, dict):
        return {key: value for key, value in body.items() if key != "requestId"}
    return body


def comparable(result: Any) -> tuple[int, dict[str, str], Any]:
    """An answer's status, headers and body but for the request's own id (X-Request-Id,
    and requestId in an error body): what must not tell two 404s apart."""
    headers = {name: value for name, value in result.headers.items() if name != "x-request-id"}
    return result.status, headers, unidentified(result.body)


def resolved(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """``schema``, its ``$ref`` into ``document`` followed (a body or answer's component)."""
    while "$ref" in schema:
        found: Any = document
        for part in schema["$ref"].removeprefix("#/").split("/"):
            found = found[part]
        schema = found
    return schema
