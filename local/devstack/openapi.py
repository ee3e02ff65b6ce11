"""Generate docs/openapi.json from the endpoints' own functions' resolvers (Powertools'
models), each built from its declaration as its function is.

    python -m devstack.openapi            # write docs/openapi.json
    python -m devstack.openapi --check    # exit 1 when the committed file differs

Each API function has its own resolver; Powertools' OpenAPIMerge merges their documents
into one (two functions claiming one route is an error).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from reservations import endpoints
from reservations.kernel.http.openapi import COMPONENTS_EXTENSION, parameter_fields

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "docs" / "openapi.json"
API_FUNCTIONS = tuple(route.function for route in endpoints.ALL)
BY_OPERATION = {route.operation_id: route for route in endpoints.ALL}
DESCRIPTION = (
    "See a GPU node's reservable units and reclaim units a reservation lent to the spot "
    "market. Every request carries `Authorization: Bearer <API key>`; every error body is "
    '{"error": str, "code": str, "details"?: [{"field", "problem"}], "requestId": str}; '
    "every response names its request in `X-Request-Id`. "
    "The repository's docs/api.md describes the API in full."
)


def generate() -> dict[str, Any]:
    """The API functions' resolvers' documents, merged by Powertools' OpenAPIMerge."""
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    from aws_lambda_powertools.event_handler.openapi.merge import OpenAPIMerge
    from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer

    merge = OpenAPIMerge(
        title="GPU reservations API",
        version="1.0.0",
        description=DESCRIPTION,
        security_schemes={"apiKey": HTTPBearer(description="Bearer vl_... API key")},
        security=[{"apiKey": []}],
        on_conflict="error",  # two functions must never claim one route
    )
    from reservations.kernel.http.functions import endpoint_function

    for route in endpoints.ALL:
        merge.add_schema(endpoint_function(route).app.get_openapi_schema())
    document = json.loads(merge.get_openapi_json_schema())
    document = _parameters_declared(_without_powertools_defaults(document))
    return _named(_headers_once(_with_examples(_bodies_once(document))))


def _with_examples(document: dict[str, Any]) -> dict[str, Any]:
    """Every schema has its examples, its model's own (a request body's, an answer's
    ``EXAMPLES`` beside its fields): one without is an error naming it."""
    for name, schema in document["components"]["schemas"].items():
        if "examples" not in schema:
            raise ValueError(f"schema {name} has no example: give its model its EXAMPLES")
    return document


def _parameters_declared(document: dict[str, Any]) -> dict[str, Any]:
    """Each parameter as ``kernel.http.openapi.parameter_fields`` declares it (the handlers take
    plain strings and check them after the key): its schema, and how a query's is sent."""
    for operations in document["paths"].values():
        for operation in operations.values():
            route = BY_OPERATION[operation["operationId"]]
            for parameter in operation.get("parameters", []):
                fields = parameter_fields(parameter["in"], parameter["name"], route)
                parameter.update(fields)
                if "description" not in fields:  # the path's ids, the header: its own
                    parameter.setdefault("description", parameter["schema"].get("description"))
                parameter["schema"] = dict(fields["schema"])
                if parameter.get("description") is None:
                    parameter.pop("description", None)
    return document


# The components' names as a client developer would write them (the models' own names say
# what they are in the code: a view, a body).
NAMES = {
    "ReservationView": "Reservation",
    "ReclaimResponse": "ReclaimResult",
    "UnitView": "Unit",
    "WorkloadView": "Workload",
    "NodeView": "Node",
    "ErrorBody": "Error",
    "CloudEventView": "Event",
    "ThrottledBody": "TooManyRequests",
    "CapacityRequest": "UnitsRequest",
    "LendingPolicyView": "LendingPolicy",
}


def _bodies_once(document: dict[str, Any]) -> dict[str, Any]:
    """Each request body's schemas (``x-components``) declared once under
    ``components/schemas``; the bodies refer to them."""
    schemas = document["components"]["schemas"]
    for operations in document["paths"].values():
        for operation in operations.values():
            for name, schema in operation.pop(COMPONENTS_EXTENSION, {}).items():
                if schemas.setdefault(name, schema) != schema:
                    raise ValueError(f"schema {name} is declared two ways")
    return document


def _named(document: dict[str, Any]) -> dict[str, Any]:
    """The components renamed by :data:`NAMES`, every reference with them."""
    text = json.dumps(document)
    for old, new in NAMES.items():
        text = text.replace(f'"#/components/schemas/{old}"', f'"#/components/schemas/{new}"')
    renamed: dict[str, Any] = json.loads(text)
    schemas = renamed["components"]["schemas"]
    for old, new in NAMES.items():
        if old in schemas:
            schemas[new] = {**schemas.pop(old), "title": new}
    return renamed


def _headers_once(document: dict[str, Any]) -> dict[str, Any]:
    """Each response header declared once, under ``components/headers``, and referred to
    by every response that carries it (a header means the same on every response)."""
    declared: dict[str, Any] = {}
    for operations in document["paths"].values():
        for operation in operations.values():
            for response in operation["responses"].values():
                for name, header in response.get("headers", {}).items():
                    if declared.setdefault(name, header) != header:
                        raise ValueError(f"header {name} is declared two ways")
                    response["headers"][name] = {"$ref": f"#/components/headers/{name}"}
    document["components"]["headers"] = declared
    return document


def _without_powertools_defaults(document: dict[str, Any]) -> dict[str, Any]:
    """Powertools documents a 422 for request validation; ours answers 400 in ErrorBody."""
    default_ref = "#/components/schemas/HTTPValidationError"
    for operations in document["paths"].values():
        for operation in operations.values():
            responses = operation["responses"]
            schema = responses.get("422", {}).get("content", {}).get("application/json", {})
            if schema.get("schema", {}).get("$ref") == default_ref:
                del responses["422"]
            # Powertools gives every response the return type's schema; a 204 and a 304
            # have no body.
            for bodiless in ("204", "304"):
                responses.get(bodiless, {}).pop("content", None)
    for unused in ("HTTPValidationError", "ValidationError", "ResponseValidationError"):
        if unused not in json.dumps(document["paths"]):
            document["components"]["schemas"].pop(unused, None)
    return document


def render(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)
    text = render(generate())
    if args.check:
        if not SPEC.exists() or SPEC.read_text() != text:
            print(f"{SPEC.relative_to(ROOT)} is out of date: run `make openapi`", file=sys.stderr)
            return 1
        return 0
    SPEC.write_text(text)
    print(f"wrote {SPEC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
