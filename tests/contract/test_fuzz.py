"""Schemathesis against the real handlers in-process (moto behind them), both endpoints.

Valid and invalid keys, real and random ids, valid and mutated bodies: no 5xx, only
documented statuses, every body in the documented shape (errors: ErrorBody), and each
error code the one the contract gives its status. ``make fuzz`` runs the long version
(FUZZ_EXAMPLES per operation) and prints the counts.
"""

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
    409: {"reservation_not_active", "conflict", "idempotency_in_progress", "units_unavailable"},
    422: {"units_not_in_reservation", "idempotency_key_reused", "units_not_reservable"},
}
AUTHORIZATIONS = [
    "Bearer vl_test_owner",
    "Bearer vl_test_broker",
    "Bearer vl_test_operator",
    "Bearer vl_test_writer",  # reservation.write: creates
    "Bearer vl_test_stranger",
    "Bearer vl_unknown_key",
    "Basic dmw6eA==",
    None,
]
STATUSES: Counter[str] = Counter()
RES_UNITS = [f"0000:0{i}:00.0" for i in range(4, 9)]  # res-1's, all lent
FREE_UNITS = ["0000:09:00.0", "0000:0a:00.0"]
SPARE = [f"res-{n}" for n in range(2, 30)]

app = LambdaApi(
    # Every function the OpenAPI document is made from: each documented route is fuzzed.
    {name: load_function(name) for name in openapi.API_FUNCTIONS},
    openapi.render(openapi.generate()),
)
schema = schemathesis.openapi.from_wsgi("/openapi.json", app)


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
        # res-1 for reclaim and release; pending ones for cancel to end, so that res-1 lives.
        spare = [f.reservation(r, [FREE_UNITS[0]], status="pending", startsAt=f.days(400 + n),
                               endsAt=f.days(401 + n)) for n, r in enumerate(SPARE)]  # fmt: skip
        fleet = f.fleet([f.node(
            "node-a",
            [f.unit(u) for u in [*RES_UNITS, *FREE_UNITS]],
            [f.reservation("res-1", RES_UNITS, releasedUnitIds=RES_UNITS), *spare],
            [f.workload(f"vm-{i}", [u]) for i, u in enumerate(RES_UNITS[:3])],
        )], extra_keys=[{"key": "vl_test_writer", "orgId": "org-acme",
                         "permissions": ["reservation.read", "reservation.write"]}])  # fmt: skip
        load_fleet(fleet, boto3.client("dynamodb"), boto3.client("sqs"))
        yield
        clients.reset()
    os.environ.clear()
    os.environ.update(saved)


def _aim(case: Any) -> None:
    """Half the cases at the real node and reservation, with a mix of keys."""
    chooser = random.Random(repr((case.path_parameters, case.body, case.headers)))
    authorization = chooser.choice(AUTHORIZATIONS)
    if chooser.random() < 0.5:
        case.path_parameters["nodeId"] = "node-a"
        cancel = case.operation.path.endswith("/cancel")
        create = case.operation.path.endswith("/reservations") and case.method == "POST"
        if "reservationId" in case.path_parameters:
            case.path_parameters["reservationId"] = chooser.choice(SPARE) if cancel else "res-1"
        if isinstance(case.body, dict) and chooser.random() < 0.6:
            _plausible(case.body, chooser, create)
            if create:  # by the owner, who may
                authorization = "Bearer vl_test_writer"
    case.headers = {k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"}
    if authorization:
        case.headers["Authorization"] = authorization


def _plausible(body: dict[str, Any], chooser: random.Random, create: bool) -> None:
    """Units the call may take (res-1's for reclaim and release), and for a create a term
    of its own: so that a share of the cases get past validation and write."""
    if "unitIds" in body:
        body["unitIds"] = chooser.sample(FREE_UNITS if create else RES_UNITS, chooser.randint(1, 2))
    if create:
        starts = chooser.randrange(1, 10**5)
        body.update(startsAt=f.days(starts / 24), endsAt=f.days((starts + 1) / 24))


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_the_api_never_breaks_its_contract(case, world):
    _aim(case)
    response = call_and_check(case, CODES)
    if response is None:
        STATUSES["no route (API Gateway)"] += 1
        return
    STATUSES[f"{case.operation.method.upper()} {case.operation.path} {response.status_code}"] += 1


def test_fuzz_counts_are_printed():
    """Runs last in this module: the tally of statuses seen (``make fuzz`` shows it)."""
    total = sum(STATUSES.values())
    print(f"\nfuzz: {total} requests; by status: {dict(sorted(STATUSES.items()))}")
    assert total > 0
