"""Schemathesis against GET /v1/usage, in-process over moto (a fleet of two nodes loaded,
its fleet index written from the stream): no 5xx, only documented statuses and shapes, each
error code the contract's for its status; never a 404 but for a key without
``usage.read``, and, where a page answers, every row the caller may see only."""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from devstack import fleet_documents as f
from reservations import endpoints
from reservations.kernel.event_log import SETTLE_WINDOW
from tests.support.fleet_index import FleetStream
from tests.support.fuzzing import (
    FUZZED,
    api_schema,
    call_and_check,
    fleet_world,
    tally,
    with_key,
)

pytestmark = pytest.mark.fuzz

CODES = {400: {"invalid_request"}, 401: {"unauthorized"}, 404: {"not_found"}}
KEYS = {  # key -> (org, what its rows may name)
    "vl_local_test_usage_operator": ("org-platform", None),
    "vl_local_test_usage_owner": ("org-acme", {"node-a", "res-1", "res-2", "res-3"}),
    "vl_local_test_usage_broker": ("org-broker", {"res-1", "res-4"}),
    "vl_local_test_usage_stranger": ("org-stranger", set()),
}
AUTHORIZATIONS = [
    *(f"Bearer {key}" for key in KEYS),
    "Bearer vl_local_test_owner",  # reservation.read and .capacity, no usage.read: the 404
    "Bearer vl_unknown_key",
    None,
]
STATUSES: Counter[str] = Counter()
ROWS: Counter[str] = Counter()  # rows whose visibility was checked
# Periods a client would ask for: whole days and hours around the fleet's load (today).
PERIODS = [
    {"from": "2026-01-01T00:00:00Z", "to": "2027-01-01T00:00:00Z", "granularity": "day"},
    {"from": "2030-01-01T00:00:00Z", "to": "2030-01-02T00:00:00Z", "granularity": "hour"},
]
schema = api_schema([endpoints.LIST_USAGE])


@pytest.fixture(scope="module")
def world() -> Iterator[None]:
    units = [f"0000:0{i}:00.0" for i in range(4, 9)]
    keys = [{"key": key, "orgId": org, "permissions": ["usage.read"]}
            for key, (org, _) in KEYS.items()]  # fmt: skip
    fleet = f.fleet([
        f.node("node-a", [f.unit(u) for u in units],
               [f.reservation("res-1", units[:2], releasedUnitIds=units[:1]),
                f.reservation("res-2", units[2:3], endsAt=None, managingOrgIds=[]),
                f.reservation("res-3", units[3:], status="cancelled", managingOrgIds=[])]),
        f.node("node-b", [f.unit(u) for u in units], [f.reservation("res-4", units[:1])],
               owner="org-other"),
    ], keys)  # fmt: skip
    with fleet_world(fleet, node_queues=True):
        FleetStream(boto3.client("dynamodb")).run()
        # Usage counts up to now less the settle window: past it, the load has rows.
        time.sleep(SETTLE_WINDOW.total_seconds() + 1)
        yield


def _aim(case: Any) -> str | None:
    """Half the cases made a query a client would send (a whole period, maybe real node
    and reservation ids, a limit), the rest as generated; a mix of keys. The key sent."""
    # The case's own choices: its query is all it varies in (no path, no body).
    choose = random.Random(repr((case.query, case.headers)))
    if choose.random() < 0.5:
        query: dict[str, str] = {**choose.choice(PERIODS), "limit": str(choose.randint(1, 3))}
        if choose.random() < 0.5:
            query["nodeId"] = choose.choice(["node-a", "node-a,node-b", "node-x"])
        if choose.random() < 0.5:
            query["groupBy"] = "reservation"
            if choose.random() < 0.5:
                query["reservationId"] = choose.choice(["res-1", "res-1,res-4", "res-x"])
        case.query = query
    authorization = choose.choice(AUTHORIZATIONS)
    with_key(case, authorization)
    return authorization


@schema.parametrize()
@FUZZED
def test_usage_never_breaks_the_contract_nor_shows_a_row_it_may_not(case, world):
    authorization = _aim(case)
    response = call_and_check(case, CODES)
    if response is None:  # API Gateway answered itself (tests/support/wsgi.py says when)
        STATUSES["no route (API Gateway)"] += 1
        return
    STATUSES[f"GET /v1/usage {response.status_code}"] += 1
    if response.status_code != 200 or authorization is None:
        return
    ROWS["checked"] += len(response.json()["items"])
    _org, sees = KEYS.get(authorization.removeprefix("Bearer "), ("", set()))
    for row in response.json()["items"]:
        named = row.get("reservationId") or row["nodeId"]
        assert sees is None or named in sees, (authorization, row)
        assert row["nodeId"] in {"node-a", "node-b"}


def test_usage_fuzz_counts_are_printed():
    """Runs last in this module: the tally of statuses seen."""
    seen = tally("usage fuzz", STATUSES)
    print(f"usage fuzz: {ROWS['checked']} rows checked against who may see them")
    assert ROWS["checked"] > 0
    assert {"GET /v1/usage 200", "GET /v1/usage 400", "GET /v1/usage 404"} <= seen
