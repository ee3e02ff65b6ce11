"""An API function built from its route description: its resolver, its ports and its
decorated handler; for a write route, the whole function from the route and its use case."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Header
from aws_lambda_powertools.utilities.typing import LambdaContext

from reservations.kernel.bodies import RawBody
from reservations.kernel.http.openapi import request_body, responses
from reservations.kernel.http.resolver import create_app, current_caller, with_request_id
from reservations.kernel.http.routes import ApiRoute
from reservations.kernel.idempotency.models import Outcome
from reservations.kernel.observability import API_REQUEST, tracer
from reservations.kernel.pipeline import WriteSpec, run_write
from reservations.kernel.ports import Ports
from reservations.kernel.preconditions import etag_header, parse_if_none_match
from reservations.kernel.wiring import Handler, entry_point

Registered = TypeVar("Registered", bound=Callable[..., Any])
P = TypeVar("P", bound=Ports)

IDEMPOTENCY_KEY = Annotated[
    str | None, Header(alias="Idempotency-Key", description="1-255 printable characters; 24 h")
]
IF_MATCH = Annotated[
    str | None,
    Header(
        alias="If-Match",
        description='act only on this version: * or "tag" (ETag / etag), comma-separated; '
        "W/ tags never match; another version is a 412 and nothing is done; a dry run "
        "ignores it",
    ),
]
IF_NONE_MATCH = Annotated[
    str | None,
    Header(
        alias="If-None-Match",
        description='the versions held: * or "tag" (ETag / etag), comma-separated; the '
        "current one answers 304 with its ETag and no body",
    ),
]


@dataclass
class ApiFunction(Generic[P]):
    """An API function: its resolver, its slice's ports (read at each call, so a test may
    swap them), and its Lambda handler."""

    app: APIGatewayHttpResolver
    ports: P
    lambda_handler: Handler
    spec: WriteSpec[Any, Any, Any, Any] | None = None  # a write route's use case

    def route(self, route: ApiRoute) -> Callable[[Registered], Registered]:
        """Register ``route``'s handler under its path, as the OpenAPI document shows it;
        a subsegment is traced per call."""

        def register(handler: Registered) -> Registered:
            traced = tracer.capture_method(capture_response=False)(handler)
            self.app.route(route.rule, route.method, **_documented(route))(traced)
            return handler

        return register


def api_function(ports: P, default_route: bool = False) -> ApiFunction[P]:
    """A resolver answering every failure in the contract's shape, behind the handler;
    ``ports``: what its use cases read and write."""
    app = create_app(default_route)

    @entry_point(API_REQUEST)
    def lambda_handler(event: dict[str, Any], context: LambdaContext) -> Any:
        return with_request_id(event, lambda: app.resolve(event, context))

    return ApiFunction(app, ports, lambda_handler)


def write_function(route: ApiRoute, ports: P) -> ApiFunction[P]:
    """The whole function of a write route, from its declaration and its slice's ``ports``:
    its body parsed by its use case (after the key, so 401 comes before 400), the write
    pipeline, and the answer as rendered once."""
    if route.spec is None:
        raise ValueError(f"{route.operation_id} is no write: it declares no use case")
    spec = route.spec
    function = api_function(ports)
    function.spec = spec

    def write(**ids: str) -> Response[str]:
        header = ids.pop("idempotency_key", None)
        if_match = ids.pop("if_match", None)
        event = function.app.current_event
        outcome = run_write(
            spec,
            route.at(**ids),
            current_caller(function.app),
            RawBody(event.body, bool(event.is_base64_encoded), event.headers.get("content-type")),
            header,
            function.ports,
            if_match,
        )
        return answer(outcome)

    write.__signature__ = _signature(route)  # type: ignore[attr-defined]
    write.__name__ = write.__qualname__ = route.operation_id
    function.route(route)(write)
    return function


def answer(outcome: Outcome) -> Response[str]:
    """The logic's answer as it rendered it: the same bytes on a replay."""
    return Response(
        status_code=outcome.status,
        content_type=content_types.APPLICATION_JSON if outcome.body else None,
        body=outcome.body,
        headers=dict(outcome.headers) or None,
    )


def versioned_answer(body: str, tag: str, if_none_match: str | None) -> Response[str]:
    """A read of one versioned thing (``body``, rendered, at version ``tag``) with its
    ETag: 304 and no body when If-None-Match names the tag (weakly, as RFC 9110 compares
    for it) or is ``*``; else 200 and the body."""
    held = parse_if_none_match(if_none_match)
    if held is not None and held.matches_weakly(tag):
        return answer(Outcome(304, "", (etag_header(tag),)))
    return answer(Outcome(200, body, (etag_header(tag),)))


def _signature(route: ApiRoute) -> inspect.Signature:
    """What the resolver reads of a write's handler: the path's ids, the Idempotency-Key
    header where the route takes one, and the If-Match where it honours one."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    parameters = [inspect.Parameter(name, keyword, annotation=str) for name in route.path_ids]
    if route.keyed:
        parameters.append(
            inspect.Parameter("idempotency_key", keyword, default=None, annotation=IDEMPOTENCY_KEY)
        )
    if route.if_match:
        parameters.append(inspect.Parameter("if_match", keyword, default=None, annotation=IF_MATCH))
    return inspect.Signature(parameters, return_annotation=Response[str])


def _documented(route: ApiRoute) -> dict[str, Any]:
    """The route's summary, operation id, responses and body, for the OpenAPI document."""
    documented = responses(route)
    extensions = request_body(route.body, route.body_required) if route.body else None
    return {
        "summary": route.summary,
        "description": route.description,
        "operation_id": route.operation_id,
        "tags": [route.tag],
        "responses": documented,
        "openapi_extensions": extensions,
    }
