"""The schemathesis scaffolding every fuzz module shares: the API over its handlers, a world
of moto with one fleet, how a case is aimed at that fleet, the contract's checks of every
response, and the tally of what came back. ``FUZZ_EXAMPLES`` sets the examples per
operation (``make fuzz`` runs the long version and prints the tallies)."""

from __future__ import annotations

import os
import random
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import schemathesis
from hypothesis import HealthCheck, settings
from moto import mock_aws
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from devstack import openapi, template
from devstack.fleets import NODE_QUEUE_PREFIX, load_fleet
from devstack.functions import load_function
from reservations import endpoints
from reservations.kernel.aws import clients
from reservations.kernel.http.openapi import ERROR_CODES
from reservations.kernel.http.routes import ApiRoute
from reservations_tools.fleet.loader import local_dead_letter_arn
from tests.support.wsgi import LambdaApi

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "40"))
# Every fuzz test's hypothesis settings: the same examples every run (derandomized).
FUZZED = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


def api_schema(routes: Iterable[ApiRoute] | None = None) -> Any:
    """The generated OpenAPI document, served with these endpoints' functions behind it, and
    only their operations fuzzed (``None``: every endpoint, as the table of contents lists
    them; a slice's ``ENDPOINTS``: the slice's, a new one included)."""
    fuzzed = tuple(endpoints.ALL if routes is None else routes)
    functions = {route.function: load_function(route.function) for route in fuzzed}
    app = LambdaApi(functions, openapi.render(openapi.generate()))
    schema = schemathesis.openapi.from_wsgi("/openapi.json", app)
    if routes is None:
        return schema
    return schema.include(operation_id=[route.operation_id for route in fuzzed])


@contextmanager
def fleet_world(fleet: dict[str, Any], node_queues: bool = False) -> Iterator[None]:
    """moto with ``fleet`` loaded, for a whole module (state carries over between examples);
    ``node_queues``: the settings a node's registration makes its queue with."""
    saved = dict(os.environ)
    os.environ.update(
        AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1", TABLE_NAME="ReservationsTable",
    )  # fmt: skip
    os.environ.pop("AWS_ENDPOINT_URL", None)
    with mock_aws():
        clients.reset()
        template.create_tables(boto3.client("dynamodb"))
        template.create_queues(boto3.client("sqs"))
        if node_queues:
            os.environ["NODE_QUEUE_PREFIX"] = NODE_QUEUE_PREFIX
            os.environ["NODE_DEAD_LETTER_QUEUE_ARN"] = local_dead_letter_arn(boto3.client("sqs"))
        load_fleet(fleet, boto3.client("dynamodb"), boto3.client("sqs"))
        yield
        clients.reset()
    os.environ.clear()
    os.environ.update(saved)


def chooser(case: Any) -> random.Random:
    """A case's own random choices: the same case is aimed the same way every run."""
    return random.Random(repr((case.path_parameters, case.body, case.headers)))


def with_key(case: Any, authorization: str | None) -> None:
    """The case sent with this Authorization header (None: none)."""
    case.headers = {k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"}
    if authorization:
        case.headers["Authorization"] = authorization


def call_and_check(case: Any, codes: dict[int, set[str]]) -> Any | None:
    """Send ``case``; the response after the contract's checks, or None where API Gateway
    itself answers (e.g. an empty path parameter) and none of our functions runs."""
    response = case.call()
    if response.headers.get("x-gateway-route") == ["none"]:
        return None
    case.validate_response(response, checks=CHECKS)
    if response.status_code >= 400:
        body = response.json()
        assert set(body) <= {"error", "code", "details", "requestId"}
        assert [body["requestId"]] == response.headers["x-request-id"]
        assert body["code"] in codes.get(response.status_code, set()), (
            response.status_code,
            body,
            case.headers,
            case.media_type,
        )
        assert "Traceback" not in response.text
        assert body["code"] in listed_codes(case, response.status_code), (case.operation, body)
    if response.status_code == 401:
        assert response.headers.get("www-authenticate") == ["Bearer"]
    return response


def listed_codes(case: Any, status: int) -> list[str]:
    """The codes the OpenAPI document lists for the case's operation and ``status``."""
    responses = case.operation.definition.raw["responses"]
    listed: list[str] = responses.get(str(status), {}).get(ERROR_CODES, [])
    return listed


def checked(case: Any, codes: dict[int, set[str]], statuses: Counter[str]) -> None:
    """Send and check ``case``, and count its answer: ``METHOD path status``."""
    response = call_and_check(case, codes)
    if response is None:
        statuses["no route (API Gateway)"] += 1
        return
    operation = case.operation
    statuses[f"{operation.method.upper()} {operation.path} {response.status_code}"] += 1


def tally(title: str, statuses: Counter[str]) -> set[str]:
    """Print what came back (``make fuzz`` shows it); the answers seen."""
    total = sum(statuses.values())
    print(f"\n{title}: {total} requests; by status: {dict(sorted(statuses.items()))}")
    assert total > 0
    return set(statuses)
