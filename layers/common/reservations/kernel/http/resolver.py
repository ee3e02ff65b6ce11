"""The one place where errors become HTTP responses, shared by every API function."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import BotoCoreError, ClientError, ConnectionError, HTTPClientError

from reservations.kernel import api_keys
from reservations.kernel.auth import KeyCache, authenticate
from reservations.kernel.aws import clients
from reservations.kernel.caller import Caller
from reservations.kernel.clock import utc_now
from reservations.kernel.errors import (
    ApiError,
    FieldProblem,
    InvalidRequest,
    NotFound,
    Unauthorized,
    Unavailable,
    field_path,
)
from reservations.kernel.observability import logger, metrics
from reservations.kernel.settings import settings
from reservations.kernel.wire import REQUEST_ID, SHOWN_NULLS, error_json

# Per container: a warm Lambda answers a cached key without a DynamoDB read.
key_cache = KeyCache(ttl=lambda: settings().key_cache_ttl_seconds)


REQUEST_ID_HEADER = "X-Request-Id"


def with_request_id(event: dict[str, Any], resolve: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The answer to ``event`` carrying its request id: API Gateway's, or one made here when
    the event has none. The same id is every log line's correlation id, every error body's
    ``requestId`` and the response's ``X-Request-Id``; a client cannot choose it."""
    given = event.get("requestContext", {}).get("requestId")
    request_id = given if isinstance(given, str) and given else uuid.uuid4().hex
    logger.set_correlation_id(request_id)
    token = REQUEST_ID.set(request_id)
    try:
        answered = resolve()
    finally:
        REQUEST_ID.reset(token)
    answered["headers"] = {**(answered.get("headers") or {}), REQUEST_ID_HEADER: request_id}
    return answered


def error_headers(error: ApiError) -> dict[str, str] | None:
    """An error's headers besides Content-Type: the 401's challenge, ``Retry-After``
    where the error's definition says when to try again, and the error's own (a 412's
    current ``ETag``)."""
    headers = {"WWW-Authenticate": "Bearer"} if isinstance(error, Unauthorized) else {}
    if error.retry_after is not None:
        headers["Retry-After"] = str(error.retry_after)
    headers.update(error.headers)
    return headers or None


def error_response(error: ApiError) -> Response[str]:
    headers = error_headers(error)
    return Response(
        status_code=error.status,
        content_type=content_types.APPLICATION_JSON,
        body=error_json(error),
        headers=headers,
    )


# The one object whose nulls are kept: a change's ``{"from", "to"}`` (an event's
# ``data.changes``), where the contract's null says "absent" before or after it.
_CHANGE = frozenset({"from", "to"})


def without_nulls(value: Any) -> Any:
    """The contract's "absent, not null": drop None values from response objects (but
    from a change's ``{"from", "to"}``, where null is the contract's "absent", and the
    fields a model shows as null: ``kernel.wire.SHOWN_NULLS``)."""
    if isinstance(value, dict):
        if value.keys() == _CHANGE:
            return {key: without_nulls(item) for key, item in value.items()}
        return {
            key: without_nulls(item)
            for key, item in value.items()
            if item is not None or key in SHOWN_NULLS
        }
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


def serialize(value: Any) -> str:
    return json.dumps(without_nulls(value), separators=(",", ":"), ensure_ascii=False)


def _within_the_invocation(app: APIGatewayHttpResolver, next_middleware: Any) -> Any:
    """No AWS try may start that would end after the function's own timeout: a store that
    hangs gets the contract's 5xx, never API Gateway's timeout answer."""
    clients.start_request(app.lambda_context.get_remaining_time_in_millis() / 1000)
    try:
        return next_middleware(app)
    finally:
        clients.end_request()


def _aws_unreachable(error: BotoCoreError | ClientError) -> Response[str]:
    # AWS did not answer (every try timed out, or no time was left for another), or it
    # answered that it could not (``aws_outage``): a 503 in the contract's shape, logged
    # without a stack; an outage, not a bug.
    logger.warning("request gave up: AWS did not answer", extra={"why": str(error)})
    metrics.add_metric(name="RequestsUnanswered", unit=MetricUnit.Count, value=1)
    return error_response(Unavailable())


def _unexpected(error: Exception) -> Response[str]:
    # Logged with its stack for operators; the client sees no internal names.
    logger.exception("unhandled error")
    return error_response(ApiError("internal error"))


_UNREACHABLE = (clients.DeadlineReached, HTTPClientError, ConnectionError)

# The error codes of AWS's throttling answers (DynamoDB's among them), as its SDKs retry them.
_THROTTLING = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "TooManyRequestsException",
    }
)


def aws_outage(error: ClientError) -> bool:
    """AWS answered, but that it could not serve the request now: its own 5xx (a 500
    ``InternalServerError``, a 503 ``ServiceUnavailable``) or throttling, still so after
    the client's own tries. The request is not at fault and no code is wrong: the caller
    gets the 503 it gets when AWS does not answer, and tries again. Any other client error
    that reaches the resolver is a bug (500)."""
    status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
    return status >= 500 or error.response.get("Error", {}).get("Code") in _THROTTLING


def _aws_refused(error: ClientError) -> Response[str]:
    return _aws_unreachable(error) if aws_outage(error) else _unexpected(error)


def _unrouted(app: APIGatewayHttpResolver) -> Response[str]:
    """A path none of this function's routes matches. API Gateway sent it here by its
    shape, so a path id holds characters the route patterns do not take: a malformed id,
    answered like any other, the key first (401), then the 404. An empty path id is the
    ``$default`` route's 404 whatever the key, as deployed."""
    if not all(app.current_event.path.split("/")[1:]):
        return error_response(NotFound())
    try:
        current_caller(app)
    except ApiError as refused:
        return error_response(refused)
    except _UNREACHABLE as error:
        return _aws_unreachable(error)
    except ClientError as error:
        return _aws_refused(error)
    except Exception as error:
        return _unexpected(error)
    return error_response(NotFound())


def create_app(default_route: bool = False) -> APIGatewayHttpResolver:
    """A resolver whose every failure answers in the contract's error shape.

    ``default_route``: the HTTP API's ``$default`` route, which has no routes of its own and
    answers every request the 404 without looking at the key (nothing is behind it)."""
    app = APIGatewayHttpResolver(enable_validation=True, serializer=serialize)

    app.use(middlewares=[_within_the_invocation])

    @app.exception_handler(ApiError)
    def _api_error(error: ApiError) -> Response[str]:
        if error.status == 409:  # not active, lost every race, or idempotency in progress
            metrics.add_metric(name="Responses409", unit=MetricUnit.Count, value=1)
        return error_response(error)

    @app.exception_handler(RequestValidationError)
    def _validation_error(error: RequestValidationError) -> Response[str]:
        # Powertools answers 422 by default; the contract says 400 invalid_request.
        problems = [
            FieldProblem(field=field_path(e.get("loc", ())), problem=e.get("msg", ""))
            for e in error.errors()
        ]
        return error_response(InvalidRequest("request is not valid", problems))

    @app.not_found
    def _no_route(_: Exception) -> Response[str]:
        if default_route:
            return error_response(NotFound())
        # Not-found skips the middlewares: the key's read gets the request's deadline here.
        return _within_the_invocation(app, _unrouted)

    app.exception_handler(list(_UNREACHABLE))(_aws_unreachable)
    app.exception_handler(ClientError)(_aws_refused)
    app.exception_handler(Exception)(_unexpected)
    return app


def current_caller(app: APIGatewayHttpResolver) -> Caller:
    """Authenticate the request in hand (401 on any problem with the key)."""
    return authenticate(
        app.current_event.headers.get("authorization"), api_keys.load_api_key, key_cache, utc_now()
    )
