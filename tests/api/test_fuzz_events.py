"""Schemathesis against both event feeds, in-process over moto, with a node whose feed holds
one event of every type (relayed, so the org feeds hold theirs): no 5xx, only documented
statuses and shapes, each error code the contract's for its status, and no event any key
may not see. ``FUZZ_EXAMPLES`` sets the examples per operation (``make fuzz``: the long run)."""

from __future__ import annotations

import os
import random
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from moto import mock_aws

from devstack import fleet_documents as f
from devstack import openapi, template
from devstack.fleets import load_fleet
from devstack.functions import load_function
from reservations.kernel.aws import clients
from tests.support import event_scenario as s
from tests.support.event_table import StreamRelay, name_workload_orgs, write_events
from tests.support.fuzzing import call_and_check
from tests.support.wsgi import LambdaApi

pytestmark = pytest.mark.fuzz

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "60"))
CODES = {400: {"invalid_request"}, 401: {"unauthorized"}, 404: {"not_found"}}
AUTHORIZATIONS = [*(s.bearer(kind) for kind in s.CALLERS), "Bearer vl_unknown_key", None]
STATUSES: Counter[str] = Counter()
TYPES = sorted(s.SEES)

app = LambdaApi(
    {name: load_function(name) for name in ("node_events", "org_events")},
    openapi.render(openapi.generate()),
)
schema = schemathesis.openapi.from_wsgi("/openapi.json", app).include(
    operation_id=["listNodeEvents", "listEvents"]
)


@pytest.fixture(scope="module")
def world() -> Iterator[dict[str, str]]:
    """moto with node-a and its events for the whole module; key -> the orgs' visible ids."""
    saved = dict(os.environ)
    os.environ.update(
        AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1", TABLE_NAME="ReservationsTable",
    )  # fmt: skip
    os.environ.pop("AWS_ENDPOINT_URL", None)
    with mock_aws():
        clients.reset()
        dynamodb = boto3.client("dynamodb")
        template.create_tables(dynamodb)
        template.create_queues(boto3.client("sqs"))
        template.create_event_buses(boto3.client("events"))
        reservations = [f.reservation("res-1", ["0000:04:00.0"]), f.reservation(
            "res-2", ["0000:05:00.0"], managingOrgIds=["org-reclaimer"], allowedOrgIds=["org-lab2"])]  # fmt: skip
        node = f.node("node-a", [f.unit("0000:04:00.0"), f.unit("0000:05:00.0")], reservations)
        fleet = s.with_feed_permissions(f.fleet([node], extra_keys=s.fleet_keys()))
        load_fleet(fleet, dynamodb, boto3.client("sqs"))
        name_workload_orgs(dynamodb, "node-a", ["org-spotbuyer"])
        base = (datetime.now(UTC) - timedelta(hours=1)).replace(microsecond=0)
        events = write_events(s.every_type(base))
        StreamRelay(dynamodb, load_function("event_relay")).run()
        yield {
            s.bearer(kind): {e.id for e in events if kind in s.SEES[e.event.type.value]}
            for kind in s.CALLERS
        }
        clients.reset()
    os.environ.clear()
    os.environ.update(saved)


def _aim(case: Any) -> None:
    """Most cases at the real node, many with real types, and a mix of keys."""
    chooser = random.Random(repr((case.path_parameters, case.query, case.headers)))
    if case.path_parameters is not None and chooser.random() < 0.7:
        case.path_parameters["nodeId"] = "node-a"
    if chooser.random() < 0.4:
        case.query = {**(case.query or {}), "types": ",".join(chooser.sample(TYPES, 2))}
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
def test_the_feeds_never_break_the_contract_nor_show_what_a_key_may_not_see(case, world):
    _aim(case)
    response = call_and_check(case, CODES)
    if response is None:
        STATUSES["no route (API Gateway)"] += 1
        return
    STATUSES[f"{case.operation.path} {response.status_code}"] += 1
    if response.status_code == 200:
        shown = {item["id"] for item in response.json()["items"]}
        assert shown <= world[case.headers["Authorization"]]


def test_the_feeds_fuzz_counts_are_printed():
    """Runs last in this module: the tally of statuses seen."""
    total = sum(STATUSES.values())
    print(f"\nevent feeds fuzz: {total} requests; by status: {dict(sorted(STATUSES.items()))}")
    assert total > 0
    assert any(key.endswith(" 200") for key in STATUSES)
