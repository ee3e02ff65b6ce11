"""Schemathesis against the scheduler's operations (place and end a workload), in-process
over moto: no 5xx, only documented statuses and shapes, each error code the contract's for
its status. ``FUZZ_EXAMPLES`` sets the examples per operation, as for the other endpoints."""

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
    409: {"units_unavailable", "workload_exists", "conflict"},
    422: {"units_not_sellable", "idempotency_key_reused"},
}
UNITS = [f"0000:{i:02x}:00.0" for i in range(4, 20)]  # 0a-0d free, reserved by nothing
# The workloads the fleet starts with, on 04, 05 and 0e-13: what an end may find.
ENDABLE = ["vm-0", "vm-1", *(f"pod-{i}" for i in range(6))]
AUTHORIZATIONS = [
    "Bearer vl_test_scheduler",
    "Bearer vl_test_scheduler",
    "Bearer vl_test_operator",  # the operator, without workload.place
    "Bearer vl_test_owner_places",  # workload.place, not the operator
    "Bearer vl_unknown_key",
    None,
]
STATUSES: Counter[str] = Counter()

app = LambdaApi(
    {name: load_function(name) for name in ("place_workload", "end_workload")},
    openapi.render(openapi.generate()),
)
schema = schemathesis.openapi.from_wsgi("/openapi.json", app).include(
    operation_id=["placeWorkload", "endWorkload"]
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
        keys = [
            {
                "key": "vl_test_scheduler",
                "orgId": "org-platform",
                "permissions": ["workload.place"],
            },
            {"key": "vl_test_owner_places", "orgId": "org-acme", "permissions": ["workload.place"]},
        ]
        fleet = f.fleet([f.node(
            "node-a",
            [f.unit(u, sellable=u != UNITS[5]) for u in UNITS],
            [f.reservation("res-1", UNITS[:3], releasedUnitIds=UNITS[:2]),
             f.reservation("res-2", [UNITS[3]], status="needs-review")],
            [*(f.workload(f"vm-{i}", [u]) for i, u in enumerate(UNITS[:2])),
             *(f.workload(f"pod-{i}", [u], kind="pod") for i, u in enumerate(UNITS[10:]))],
        )], keys)  # fmt: skip
        load_fleet(fleet, boto3.client("dynamodb"), boto3.client("sqs"))
        yield
        clients.reset()
    os.environ.clear()
    os.environ.update(saved)


def _aim(case: Any) -> None:
    """Half the cases at the real node, its units and workloads, with a mix of keys."""
    chooser = random.Random(repr((case.path_parameters, case.body, case.headers)))
    if chooser.random() < 0.5:
        case.path_parameters["nodeId"] = "node-a"
        if "workloadId" in case.path_parameters:
            case.path_parameters["workloadId"] = chooser.choice([*ENDABLE, "vm-x"])
        if isinstance(case.body, dict) and chooser.random() < 0.7:
            case.body["unitIds"] = chooser.sample(UNITS, chooser.randint(1, 2))
        if isinstance(case.body, dict) and chooser.random() < 0.6:  # a placement that may land
            case.body.update(id=f"vm-{chooser.randrange(10**6)}", kind="vm", tier="spot",
                             orgId="org-spotbuyer", unitIds=[chooser.choice(UNITS[6:10])])  # fmt: skip
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
def test_the_scheduler_operations_never_break_the_contract(case, world):
    _aim(case)
    response = call_and_check(case, CODES)
    if response is None:
        STATUSES["no route (API Gateway)"] += 1
        return
    STATUSES[f"{case.operation.method.upper()} {response.status_code}"] += 1


def test_workload_fuzz_counts_are_printed():
    """Runs last in this module: the tally of statuses seen."""
    total = sum(STATUSES.values())
    print(f"\nworkload fuzz: {total} requests; by status: {dict(sorted(STATUSES.items()))}")
    assert total > 0
    assert {"POST 201", "DELETE 204"} <= set(STATUSES), STATUSES
