"""An API function built from its endpoint's declaration: its resolver, its slice's ports and
its one handler (a write's: the write pipeline; any other's: its use case, given one
:class:`Call`). Every API function's entry point (``functions/api/app.py``) is made here."""

from __future__ import annotations

import importlib
import inspect
import keyword
import os
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Header, Query
from aws_lambda_powertools.utilities.typing import LambdaContext

from reservations.kernel.bodies import RawBody
from reservations.kernel.http.openapi import comma_list, request_body, responses
from reservations.kernel.http.resolver import create_app, current_caller, with_request_id
from reservations.kernel.http.routes import ApiRoute, Call
from reservations.kernel.idempotency.models import Outcome
from reservations.kernel.observability import API_REQUEST, tracer
from reservations.kernel.pipeline import WriteSpec, run_write
from reservations.kernel.ports import Ports
from reservations.kernel.preconditions import etag_header, parse_if_none_match
from reservations.kernel.wire import response_json
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


def endpoint(name: str) -> ApiRoute:
    """The endpoint a function serves, by ``<slice>.<function>`` (its ``ENDPOINT``
    variable): found in that slice's ``ENDPOINTS``, importing that slice alone."""
    package, _, function = name.rpartition(".")
    declared = importlib.import_module(f"reservations.{package}.endpoints").ENDPOINTS
    found: list[ApiRoute] = [route for route in declared if route.function == function]
    if len(found) != 1:
        raise LookupError(f"no one endpoint served by {function!r} in {package}'s ENDPOINTS")
    return found[0]


def function_of(name: str | None = None) -> ApiFunction[Any]:
    """The function serving the endpoint ``name`` (by default its ``ENDPOINT`` variable)."""
    return endpoint_function(endpoint(name or os.environ["ENDPOINT"]))


def endpoint_function(route: ApiRoute) -> ApiFunction[Any]:
    """The whole function of an endpoint, from its declaration: its slice's ports, and its
    one handler: a write's runs the pipeline, any other's calls its use case."""
    function = api_function(route.ports())
    function.spec = route.spec
    handle = _write(route, function) if route.spec is not None else _use(route, function)
    handle.__signature__ = _signature(route)  # type: ignore[attr-defined]
    handle.__name__ = handle.__qualname__ = route.operation_id
    function.route(route)(handle)
    return function


Handle = Callable[..., Any]


def _write(route: ApiRoute, function: ApiFunction[Any]) -> Handle:
    """The write pipeline: the body parsed by the use case after the key (so 401 comes
    before 400), and the answer as rendered once (the same bytes on a replay)."""
    spec = route.spec
    assert spec is not None

    def handle(**given: str | list[str] | None) -> Response[str]:
        event = function.app.current_event
        body = RawBody(event.body, bool(event.is_base64_encoded), event.headers.get("content-type"))
        ids = {name: str(given[name]) for name in route.path_ids}
        key, if_match = _text(given.get("idempotency_key")), _text(given.get("if_match"))
        caller = current_caller(function.app)
        outcome = run_write(spec, route.at(**ids), caller, body, key, function.ports, if_match)
        return answer(outcome)

    return handle


def _use(route: ApiRoute, function: ApiFunction[Any]) -> Handle:
    """The use case given one :class:`Call`; its answer: a model (with its ETag, and 304,
    where the route honours If-None-Match), or an ``Outcome`` as it rendered it."""
    use: Callable[[Call[Any]], Any] = route.use  # type: ignore[assignment]

    def handle(**given: str | list[str] | None) -> Any:
        call = Call(
            current_caller(function.app),
            function.ports,
            {name: str(given[name]) for name in route.path_ids},
            {name: _text(given.get(_python_name(name))) for name in route.query},
            _text(given.get("idempotency_key")),
        )
        answered = use(call)
        if isinstance(answered, Outcome):
            return answer(answered)
        if route.if_none_match:
            held = _text(given.get("if_none_match"))
            return versioned_answer(response_json(answered), answered.etag, held)
        return answered

    return handle


def _text(value: str | list[str] | None) -> str | None:
    """A parameter as a use case reads it: a list (a query's, sent ``a,b`` as the document
    declares, or with the name repeated, as generated clients send an array) as one
    comma-separated text."""
    return comma_list(value) if isinstance(value, list) else value


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
    """What the resolver reads for the route's handler: the path's ids; its query parameters
    as plain strings (a list's as a list: the use case checks them after the key, 401 before
    400); the Idempotency-Key where the route takes one; If-Match where it honours one;
    If-None-Match where it answers 304. Its return: the model, or the rendered answer."""
    only = inspect.Parameter.KEYWORD_ONLY
    parameters = [inspect.Parameter(name, only, annotation=str) for name in route.path_ids]
    for name, declared in route.query.items():
        listed = declared.get("schema", {}).get("type") == "array"
        kind: Any = list[str] | None if listed else str | None
        python = _python_name(name)
        alias = name if python != name else None
        described = Query(description=declared["description"], alias=alias)
        parameters.append(
            inspect.Parameter(python, only, default=None, annotation=Annotated[kind, described])
        )
    if route.keyed:
        parameters.append(
            inspect.Parameter("idempotency_key", only, default=None, annotation=IDEMPOTENCY_KEY)
        )
    if route.if_match:
        parameters.append(inspect.Parameter("if_match", only, default=None, annotation=IF_MATCH))
    if route.if_none_match:
        parameters.append(
            inspect.Parameter("if_none_match", only, default=None, annotation=IF_NONE_MATCH)
        )
    return inspect.Signature(parameters, return_annotation=_returns(route))


def _python_name(name: str) -> str:
    """A query parameter's name as the handler's keyword: a Python keyword (``from``) gets
    a trailing underscore, the parameter keeps its name on the wire (the alias)."""
    return f"{name}_" if keyword.iskeyword(name) else name


def _returns(route: ApiRoute) -> Any:
    """What its handler returns: the answer as rendered (a write's, a versioned read's, one
    without a body, a use case's ``Outcome``), or the model the resolver serializes."""
    if route.spec is not None or route.if_none_match or route.response is None:
        return Response[str]
    returned = typing.get_type_hints(route.use).get("return")
    return Response[str] if returned is Outcome else route.response


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
