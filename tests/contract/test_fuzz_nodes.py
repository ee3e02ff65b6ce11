"""Schemathesis against the node operator's operations (PUT a node, re-affirm), in-process
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
from devstack.fleets import NODE_QUEUE_PREFIX, load_fleet
from reservations.dal import clients
from reservations_tools.fleet.loader import local_dead_letter_arn
from tests.support import fleets as f
from tests.support.fuzzing import call_and_check
from tests.support.lambdas import load_function
from tests.support.wsgi import LambdaApi

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "40"))
CODES = {
    400: {"invalid_request"},
    401: {"unauthorized"},
    404: {"not_found"},
    409: {"stale_topology", "units_unavailable", "reservation_not_in_review", "conflict"},
    422: {"units_not_reservable", "idempotency_key_reused"},
}
AUTHORIZATIONS = [
    "Bearer vl_test_node_operator",
    "Bearer vl_test_node_operator",
    "Bearer vl_test_operator",  # the operator, without node.write
    "Bearer vl_test_owner_nodes",  # node.write, not the operator
    "Bearer vl_unknown_key",
    None,
]
STATUSES: Counter[str] = Counter()

app = LambdaApi(
    {name: load_function(name) for name in ("put_node", "reaffirm")},
    openapi.render(openapi.generate()),
)
schema = schemathesis.openapi.from_wsgi("/openapi.json", app).include(
    operation_id=["putNode", "reaffirmReservation"]
)


@pytest.fixture(scope="module")
def world() -> Iterator[None]:
    """moto with one fleet for the whole module (state carries over between examples)."""
    saved = dict(os.environ)
    os.environ.update(
        AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1", TABLE_NAME="ReservationsTable",
        NODE_QUEUE_PREFIX=NODE_QUEUE_PREFIX,
    )  # fmt: skip
    os.environ.pop("AWS_ENDPOINT_URL", None)
    with mock_aws():
        clients.reset()
        template.create_tables(boto3.client("dynamodb"))
        template.create_queues(boto3.client("sqs"))
        os.environ["NODE_DEAD_LETTER_QUEUE_ARN"] = local_dead_letter_arn(boto3.client("sqs"))
        units = [f"0000:0{i}:00.0" for i in range(4, 9)]
        keys = [
            {
                "key": "vl_test_node_operator",
                "orgId": "org-platform",
                "permissions": ["node.write"],
            },
            {"key": "vl_test_owner_nodes", "orgId": "org-acme", "permissions": ["node.write"]},
        ]
        fleet = f.fleet([f.node(
            "node-a",
            [f.unit(u) for u in units],
            [f.reservation("res-1", units[:2], status="needs-review"),
             f.reservation("res-2", units[2:])],
            [f.workload("vm-1", [units[3]])],
        )], keys)  # fmt: skip
        load_fleet(fleet, boto3.client("dynamodb"), boto3.client("sqs"))
        yield
        clients.reset()
    os.environ.clear()
    os.environ.update(saved)


def _aim(case: Any) -> None:
    """Half the cases at the real node and reservations, with a mix of keys."""
    chooser = random.Random(repr((case.path_parameters, case.body, case.headers)))
    if chooser.random() < 0.5:
        case.path_parameters["nodeId"] = "node-a"
        if "reservationId" in case.path_parameters:
            case.path_parameters["reservationId"] = chooser.choice(["res-1", "res-2"])
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
def test_the_node_operations_never_break_the_contract(case, world):
    _aim(case)
    response = call_and_check(case, CODES)
    if response is None:
        STATUSES["no route (API Gateway)"] += 1
        return
    STATUSES[f"{case.operation.method.upper()} {response.status_code}"] += 1


def test_node_fuzz_counts_are_printed():
    """Runs last in this module: the tally of statuses seen."""
    total = sum(STATUSES.values())
    print(f"\nnode fuzz: {total} requests; by status: {dict(sorted(STATUSES.items()))}")
    assert total > 0
    assert {"PUT 201", "POST 200"} <= set(STATUSES), STATUSES
