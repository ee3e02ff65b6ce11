"""Schemathesis against release and cancel, in-process over moto: no 5xx, only documented
statuses and shapes, each error code the contract's for its status. ``FUZZ_EXAMPLES`` sets
the examples per operation, as for the other endpoints (``make fuzz`` runs the long version)."""

from __future__ import annotations

import os
import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from moto import mock_aws

from devstack import openapi, template
from devstack.fleets import load_fleet
from reservations.dal import clients
from tests.support import fleets as f
from tests.support.fuzzing import call_and_check
from tests.support.lambdas import load_function
from tests.support.wsgi import LambdaApi

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "40"))
CODES = {
    400: {"invalid_request"},
    401: {"unauthorized"},
    404: {"not_found"},
    409: {"reservation_not_active", "conflict"},
    422: {"units_not_in_reservation", "idempotency_key_reused"},
}
WRITE = ["reservation.read", "reservation.capacity", "reservation.write"]
AUTHORIZATIONS = [
    "Bearer vl_test_writer",  # the owner, may cancel
    "Bearer vl_test_broker",  # manages res-1: may release
    "Bearer vl_test_operator",
    "Bearer vl_test_stranger",
    "Bearer vl_unknown_key",
    None,
]
STATUSES: Counter[str] = Counter()
UNITS = [f"0000:0{i}:00.0" for i in range(4, 9)]

app = LambdaApi(
    {name: load_function(name) for name in ("release", "cancel")},
    openapi.render(openapi.generate()),
)
schema = schemathesis.openapi.from_wsgi("/openapi.json", app).include(
    operation_id=["releaseUnits", "cancelReservation"]
)


@pytest.fixture(scope="module")
def world() -> Iterator[None]:
    """moto with one fleet for the whole module (state carries over between examples)."""
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
        units = UNITS
        # Many reservations, so that cancels keep finding live ones to end.
        reservations = [f.reservation("res-1", units, releasedUnitIds=units[:2])] + [
            f.reservation(f"res-{n}", [units[n % 5]], status="pending", startsAt=f.days(30 + n),
                          endsAt=f.days(31 + n))
            for n in range(2, 40)
        ]  # fmt: skip
        keys = [{"key": "vl_test_writer", "orgId": "org-acme", "permissions": WRITE}]
        fleet = f.fleet([f.node("node-a", [f.unit(u) for u in units], reservations)], keys)
        load_fleet(fleet, boto3.client("dynamodb"), boto3.client("sqs"))
        yield
        clients.reset()
    os.environ.clear()
    os.environ.update(saved)


def _aim(case: Any) -> None:
    """Most cases at the real node and reservations, with a mix of keys."""
    chooser = random.Random(repr((case.path_parameters, case.body, case.headers)))
    if chooser.random() < 0.7:
        case.path_parameters["nodeId"] = "node-a"
        case.path_parameters["reservationId"] = f"res-{chooser.choice([1, 1, *range(2, 40)])}"
        if isinstance(case.body, dict) and chooser.random() < 0.6:  # res-1's own units
            case.body["unitIds"] = chooser.sample(UNITS, chooser.randint(1, 2))
    authorization = chooser.choice(AUTHORIZATIONS)
    case.headers = {k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"}
    if authorization:
        case.headers["Authorization"] = authorization


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_release_and_cancel_never_break_the_contract(case, world):
    _aim(case)
    response = call_and_check(case, CODES)
    if response is None:
        STATUSES["no route (API Gateway)"] += 1
        return
    STATUSES[f"{case.operation.path.rsplit('/', 1)[1]} {response.status_code}"] += 1


def test_release_and_cancel_fuzz_counts_are_printed():
    """Runs last in this module: the tally of statuses seen."""
    total = sum(STATUSES.values())
    print(f"\nrelease/cancel fuzz: {total} requests; by status: {dict(sorted(STATUSES.items()))}")
    assert total > 0
