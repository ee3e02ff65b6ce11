"""The one check every schemathesis module makes of every response it provokes."""

from __future__ import annotations

from typing import Any

from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


def call_and_check(case: Any, codes: dict[int, set[str]]) -> Any | None:
    """Send ``case``; the response after the contract's checks, or None where API Gateway
    itself answers (e.g. an empty path parameter) and none of our functions runs."""
    response = case.call()
    if response.headers.get("x-gateway-route") == ["none"]:
        return None
    case.validate_response(response, checks=CHECKS)
    if response.status_code >= 400:
        body = response.json()
        assert set(body) <= {"error", "code", "details"}
        assert body["code"] in codes[response.status_code]
        assert "Traceback" not in response.text
    if response.status_code == 401:
        assert response.headers.get("www-authenticate") == ["Bearer"]
    return response
