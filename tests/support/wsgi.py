"""The API functions behind a WSGI app, as API Gateway would route to them.

Lets HTTP tools (schemathesis) drive the real handlers in-process: each request becomes an
HTTP API v2 event built from ``events/list_units/allowed.json``.
"""

from __future__ import annotations

import base64
import copy
import re
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl, unquote

from devstack.api_events import event_file
from devstack.functions import FakeContext
from reservations import endpoints

# Marks API Gateway's own 404 for a path no route matches (our functions never ran).
NO_ROUTE = ("X-Gateway-Route", "none")
# (method, path pattern, function, route key) of every route, as API Gateway matches them.
ROUTES = [
    (
        route.method,
        re.compile(re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", route.path)),
        route.function,
        f"{route.method} {route.path}",
    )
    for route in endpoints.ALL
]


def query_parameters(query: str) -> dict[str, str] | None:
    """``queryStringParameters`` as an HTTP API gives them: decoded, a repeated name's values
    joined with commas, absent when there is no query string."""
    values: dict[str, list[str]] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        values.setdefault(name, []).append(value)
    return {name: ",".join(given) for name, given in values.items()} or None


class LambdaApi:
    def __init__(self, functions: dict[str, ModuleType], spec: str) -> None:
        self.functions = functions
        self.spec = spec.encode()

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        method = environ["REQUEST_METHOD"]
        # Match on the raw path, as API Gateway does: an encoded "/" stays inside a parameter.
        raw = environ.get("RAW_URI") or environ.get("REQUEST_URI") or environ.get("PATH_INFO", "")
        path = raw.split("?", 1)[0]
        if path == "/openapi.json":
            start_response("200 OK", [("Content-Type", "application/json")])
            return [self.spec]
        for route_method, pattern, function, route_key in ROUTES:
            match = pattern.fullmatch(path)
            # A function this app was not given is a route it does not have (each fuzz
            # module drives its own operations).
            if match and method == route_method and function in self.functions:
                parameters = {k: unquote(v) for k, v in match.groupdict().items()}
                response = self.functions[function].lambda_handler(
                    self._event(environ, path, route_key, parameters), FakeContext()
                )
                status = response["statusCode"]
                headers = list((response.get("headers") or {}).items())
                start_response(f"{status} X", headers)
                body = response.get("body") or ""
                return [
                    base64.b64decode(body) if response.get("isBase64Encoded") else body.encode()
                ]
        # API Gateway's own answer for a route it does not have.
        start_response("404 Not Found", [("Content-Type", "application/json"), NO_ROUTE])
        return [b'{"message":"Not Found"}']

    @staticmethod
    def _event(
        environ: dict[str, Any], raw_path: str, route_key: str, parameters: dict[str, str]
    ) -> dict[str, Any]:
        event = copy.deepcopy(event_file("list_units/allowed.json"))
        headers = {
            key[5:].replace("_", "-").lower(): value
            for key, value in environ.items()
            if key.startswith("HTTP_")
        }
        if environ.get("CONTENT_TYPE"):
            headers["content-type"] = environ["CONTENT_TYPE"]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        event.pop("queryStringParameters", None)
        if parameters_given := query_parameters(environ.get("QUERY_STRING", "")):
            event["queryStringParameters"] = parameters_given
        event.update(
            routeKey=route_key,
            rawPath=raw_path,
            rawQueryString=environ.get("QUERY_STRING", ""),
            headers=headers,
            pathParameters=parameters,
            body=body.decode("utf-8", "replace") if body else None,
            isBase64Encoded=False,
        )
        event["requestContext"].update(routeKey=route_key)
        event["requestContext"]["http"].update(method=environ["REQUEST_METHOD"], path=raw_path)
        return event
