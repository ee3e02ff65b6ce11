"""Schemathesis against GET /v1/reservations, in-process over moto (its index written by
the fleet indexer from the table's stream): no 5xx, only documented statuses and shapes,
each error code the contract's for its status; never a 404 but for a key without
``reservation.read``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from devstack import fleet_documents as f
from reservations import endpoints
from tests.support.fleet_index import FleetStream
from tests.support.fuzzing import FUZZED, api_schema, checked, chooser, fleet_world, tally, with_key

pytestmark = pytest.mark.fuzz

CODES = {400: {"invalid_request"}, 401: {"unauthorized"}, 404: {"not_found"}}
AUTHORIZATIONS = [
    "Bearer vl_local_test_operator",
    "Bearer vl_local_test_owner",
    "Bearer vl_local_test_broker",
    "Bearer vl_local_test_lab",
    "Bearer vl_local_test_stranger",
    "Bearer vl_local_test_no_read",  # reservation.capacity only: the 404
    "Bearer vl_unknown_key",
    None,
]
STATUSES: Counter[str] = Counter()
schema = api_schema([endpoints.LIST_FLEET_RESERVATIONS])


@pytest.fixture(scope="module")
def world() -> Iterator[None]:
    units = [f"0000:0{i}:00.0" for i in range(4, 9)]
    keys = [{"key": "vl_local_test_no_read", "orgId": "org-broker",
             "permissions": ["reservation.capacity"]}]  # fmt: skip
    fleet = f.fleet([
        f.node("node-a", [f.unit(u) for u in units],
               [f.reservation("res-1", units[:2]), f.reservation("res-2", units[2:3],
                endsAt=None), f.reservation("res-3", units[3:], status="cancelled")]),
        f.node("node-b", [f.unit(u) for u in units], [f.reservation("res-4", units[:1])],
               owner="org-other"),
    ], keys)  # fmt: skip
    with fleet_world(fleet, node_queues=True):
        FleetStream(boto3.client("dynamodb")).run()
        yield


def _aim(case: Any) -> None:
    """Half the cases with real node ids, and a mix of keys."""
    choose = chooser(case)
    if choose.random() < 0.5 and case.query is not None:
        case.query["nodeId"] = choose.choice(["node-a", "node-a,node-b", "node-x"])
    with_key(case, choose.choice(AUTHORIZATIONS))


@schema.parametrize()
@FUZZED
def test_the_fleet_list_never_breaks_the_contract(case, world):
    _aim(case)
    checked(case, CODES, STATUSES)


def test_fleet_fuzz_counts_are_printed():
    """Runs last in this module: the tally of statuses seen."""
    seen = tally("fleet fuzz", STATUSES)
    assert {"GET /v1/reservations 200", "GET /v1/reservations 401"} <= seen
