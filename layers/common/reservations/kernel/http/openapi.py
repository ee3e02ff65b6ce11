"""What the routes declare for the generated OpenAPI document (docs/openapi.json)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from reservations.kernel.cursors import DEFAULT_LIMIT, MAX_CURSOR, MAX_LIMIT
from reservations.kernel.errors import documented_errors
from reservations.kernel.http.routes import ApiRoute, Link
from reservations.kernel.ids import RESOURCE_ID
from reservations.kernel.preconditions import MAX_HEADER
from reservations.kernel.wire import ErrorBody, ThrottledBody

# Headers, as the OpenAPI document declares them on the responses that carry them.
_REQUEST_ID = {
    "description": "the request's id: every log line of it carries it; quote it to an operator",
    "schema": {"type": "string"},
}
_RETRY_AFTER = {
    "description": "seconds to wait before trying again",
    "schema": {"type": "integer", "minimum": 1},
}
_REPLAYED = {
    "description": "true on a replay of a kept answer (same Idempotency-Key and request): "
    "status and body are the first answer's, byte for byte",
    "schema": {"type": "string", "enum": ["true"]},
}
_LOCATION = {"description": "the new resource's path", "schema": {"type": "string"}}
_ETAG = {
    "description": 'the version answered, strong and quoted ("tag"); the body\'s etag is '
    "the same tag unquoted. Send it as If-Match to act only on this version",
    "schema": {"type": "string"},
}
_CHALLENGE = {"description": "Bearer", "schema": {"type": "string"}}
# Where an error response lists the codes the operation may answer with its status, for a
# client or a test to read (the description says them in words).
ERROR_CODES = "x-error-codes"
MIN_LIMIT = 1
THROTTLED = (
    "API Gateway's own answer when the stage's rate or burst limit is exceeded: "
    '{"message":"Too Many Requests"}, no X-Request-Id; retry with backoff'
)


def responses(route: ApiRoute) -> dict[int, dict[str, Any]]:
    """The route's documented responses: its success (None: no body, as a 204 has), each
    error status it answers in ErrorBody, API Gateway's 429, each with the headers it
    carries."""
    documented: dict[int, dict[str, Any]] = {route.status: _success(route, route.success)}
    if route.created is not None:
        documented[201] = _success(route, route.created)
    if route.accepted is not None:
        documented[202] = _success(route, route.accepted)
    if route.if_none_match:
        documented[304] = {
            "description": "If-None-Match names the current version: its ETag, no body",
            "headers": {"X-Request-Id": _REQUEST_ID, "ETag": _ETAG},
        }
    for status in (*route.error_statuses, 500, 503):
        documented[status] = {
            "description": documented_errors(route.answering(status)),
            "headers": _error_headers(route, status),
            "content": {"application/json": {"model": ErrorBody}},
            ERROR_CODES: list(route.error_codes(status)),
        }
    documented[429] = {
        "description": THROTTLED,
        "content": {"application/json": {"model": ThrottledBody}},
    }
    return dict(sorted(documented.items()))


def _success(route: ApiRoute, description: str) -> dict[str, Any]:
    headers: dict[str, Any] = {"X-Request-Id": _REQUEST_ID}
    if route.located:
        headers["Location"] = _LOCATION
    if route.versioned:
        headers["ETag"] = _ETAG
    if route.keyed:
        headers["Idempotent-Replayed"] = _REPLAYED
    success: dict[str, Any] = {"description": description, "headers": headers}
    if route.response is not None:
        success["content"] = {"application/json": {"model": route.response}}
    if route.links:
        success["links"] = {target.operation_id: link(route, target) for target in route.links}
    return success


def link(route: ApiRoute, target: Link) -> dict[str, Any]:
    """A link from ``route``'s success to the operation ``target``: each of its path's ids
    the request named is the request's; the one it did not is what the success made, the
    body's ``id``."""
    parameters = {
        name: f"$request.path.{name}" if name in route.path_ids else "$response.body#/id"
        for name in target.path_ids
    }
    return {
        "operationId": target.operation_id,
        "parameters": parameters,
        "description": f"{target.operation_id}, on what this call made",
    }


def _error_headers(route: ApiRoute, status: int) -> dict[str, Any]:
    """X-Request-Id always; the 401's challenge; Retry-After where a code the route answers
    with the status says when to retry; Idempotent-Replayed where a keyed route keeps one."""
    codes = route.answering(status)
    headers: dict[str, Any] = {"X-Request-Id": _REQUEST_ID}
    if status == 401:
        headers["WWW-Authenticate"] = _CHALLENGE
    if status == 412:
        headers["ETag"] = _ETAG
    if any(error.retry_after is not None for error in codes):
        headers["Retry-After"] = _RETRY_AFTER
    if route.keyed and any(error.kept for error in codes):
        headers["Idempotent-Replayed"] = _REPLAYED
    return headers


# Where a request body's schemas go: the document's generator (``devstack.openapi``) moves
# each operation's ``x-components`` into ``components/schemas``, so every body is a named
# component a client generator names as the model is named.
COMPONENTS = "#/components/schemas/{model}"
COMPONENTS_EXTENSION = "x-components"


def request_body(model: type[BaseModel], required: bool = True) -> dict[str, Any]:
    """A body the function parses by hand after authentication (so 401 comes before 400):
    a reference to its model's component, and the model's schemas (its nested models too)
    for the document to declare once."""
    schema = model.model_json_schema(by_alias=True, mode="validation", ref_template=COMPONENTS)
    components = {model.__name__: schema, **schema.pop("$defs", {})}
    return {
        "requestBody": {
            "required": required,
            "content": {
                "application/json": {"schema": {"$ref": COMPONENTS.format(model=model.__name__)}}
            },
        },
        COMPONENTS_EXTENSION: components,
    }


def listed(values: Iterable[str], what: str) -> dict[str, Any]:
    """A comma-separated list of ``values`` (``?status=active,expired``): an array sent in
    one parameter, as OpenAPI's form style without explode sends it."""
    return {
        "description": f"comma-separated {what}",
        "schema": {"type": "array", "items": {"type": "string", "enum": list(values)}},
        "style": "form",
        "explode": False,
    }


# The query parameters every page takes, as the document declares them: what the logic
# accepts (its own checks come after the key, so the handlers take plain strings). A list's
# own filters are its route's (``ApiRoute.query``); a parameter given empty is absent
# (``allowEmptyValue``), and the logic is lenient with spaces around a list's items.
LIMIT: dict[str, Any] = {
    "description": f"page size, {MIN_LIMIT}-{MAX_LIMIT}, default {DEFAULT_LIMIT}",
    "schema": {
        "type": "integer",
        "minimum": MIN_LIMIT,
        "maximum": MAX_LIMIT,
        "default": DEFAULT_LIMIT,
    },
}
CURSOR: dict[str, Any] = {
    "description": "nextCursor of the previous page, unchanged (any other is a 400)",
    "schema": {"type": "string", "maxLength": MAX_CURSOR},
}
PAGE_QUERY: dict[str, dict[str, Any]] = {"limit": LIMIT, "cursor": CURSOR}
# The path's ids: a node's, a reservation's, a workload's, a subscription's, an event's;
# any other is the one 404.
PATH_ID: dict[str, Any] = {"schema": {"type": "string", "pattern": RESOURCE_ID}}
# The Idempotency-Key: 1-255 printable ASCII characters. HTTP trims a field value's
# leading and trailing spaces, so the document declares a key without them.
IDEMPOTENCY_KEY: dict[str, Any] = {
    "schema": {
        "type": "string",
        "minLength": 1,
        "maxLength": 255,
        "pattern": "^[!-~]([ -~]*[!-~])?$",
    },
}


# If-Match and If-None-Match: * or a comma-separated list of quoted tags.
# The pattern is the parser's (``kernel.preconditions``), spaces for its optional whitespace,
# so that a client or a fuzzer that follows the document sends a header that parses.
ENTITY_TAGS: dict[str, Any] = {
    "schema": {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_HEADER,
        "pattern": r'^ *(\*|(W/)?"[!#-~]*"( *, *(W/)?"[!#-~]*")*) *$',
    }
}


def query_parameter(route: ApiRoute, name: str) -> dict[str, Any]:
    """The ``Query(...)`` arguments of one of the route's query parameters: its description
    (the document takes the rest from :func:`parameter_fields`)."""
    return {"description": route.query[name]["description"]}


def comma_list(values: list[str] | None) -> str | None:
    """A list filter (``status``, ``state``, ``types``) as the logic reads it, one
    comma-separated text: sent so (``status=a,b``, as the document declares) or with the
    name repeated (``status=a&status=b``, as generated clients send an array) alike."""
    return None if values is None else ",".join(values)


def parameter_fields(location: str, name: str, route: ApiRoute) -> dict[str, Any]:
    """What the document declares of one of the route's parameters, by where it is and its
    name: its schema and, for a query parameter, how it is sent."""
    if location == "path":
        return PATH_ID
    if location == "header" and name.lower() == "idempotency-key":
        return IDEMPOTENCY_KEY
    if location == "header" and name.lower() in ("if-match", "if-none-match"):
        return ENTITY_TAGS
    if location == "query" and name in route.query:
        return {**route.query[name], "allowEmptyValue": True}
    raise ValueError(f"no declaration of the {location} parameter {name}")
