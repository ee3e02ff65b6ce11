"""Schemathesis against the node operator's operations (PUT a node, re-affirm), in-process
over moto: no 5xx, only documented statuses and shapes, each error code the contract's for
its status."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from devstack import fleet_documents as f
from reservations import endpoints
from tests.support.fuzzing import FUZZED, api_schema, checked, chooser, fleet_world, tally, with_key

pytestmark = pytest.mark.fuzz

CODES = {
    400: {"invalid_request"},
    415: {"unsupported_media_type"},
    401: {"unauthorized"},
    404: {"not_found"},
    409: {"stale_topology", "units_unavailable", "reservation_not_in_review", "conflict"},
    422: {"units_not_reservable", "idempotency_key_reused"},
}
AUTHORIZATIONS = [
    "Bearer vl_local_test_node_operator",
    "Bearer vl_local_test_node_operator",
    "Bearer vl_local_test_operator",  # the operator, without node.write
    "Bearer vl_local_test_owner_nodes",  # node.write, not the operator
    "Bearer vl_unknown_key",
    None,
]
STATUSES: Counter[str] = Counter()
schema = api_schema([endpoints.PUT_NODE, endpoints.REAFFIRM])


@pytest.fixture(scope="module")
def world() -> Iterator[None]:
    units = [f"0000:0{i}:00.0" for i in range(4, 9)]
    keys = [
        {
            "key": "vl_local_test_node_operator",
            "orgId": "org-platform",
            "permissions": ["node.write"],
        },
        {"key": "vl_local_test_owner_nodes", "orgId": "org-acme", "permissions": ["node.write"]},
    ]
    fleet = f.fleet([f.node(
        "node-a",
        [f.unit(u) for u in units],
        [f.reservation("res-1", units[:2], status="needs-review"),
         f.reservation("res-2", units[2:])],
        [f.workload("vm-1", [units[3]])],
    )], keys)  # fmt: skip
    with fleet_world(fleet, node_queues=True):
        yield


def _aim(case: Any) -> None:
    """Half the cases at the real node and reservations, with a mix of keys."""
    choose = chooser(case)
    if choose.random() < 0.5:
        case.path_parameters["nodeId"] = "node-a"
        if "reservationId" in case.path_parameters:
            case.path_parameters["reservationId"] = choose.choice(["res-1", "res-2"])
        # An If-Match made up by the generator is a 400 or a 412 (the other half has them):
        # without it, an aimed re-affirm can get as far as its write.
        case.headers = {k: v for k, v in (case.headers or {}).items() if k.lower() != "if-match"}
        # The generator reuses short keys ("0") across operations: an aimed case with a key
        # carries its own, so it is not refused as another request's replay.
        if any(k.lower() == "idempotency-key" for k in case.headers):
            case.headers = {k: v for k, v in case.headers.items() if k.lower() != "idempotency-key"}
            case.headers["Idempotency-Key"] = f"fuzz-{choose.getrandbits(64):016x}"
    with_key(case, choose.choice(AUTHORIZATIONS))


@schema.parametrize()
@FUZZED
def test_the_node_operations_never_break_the_contract(case, world):
    _aim(case)
    checked(case, CODES, STATUSES)


def test_node_fuzz_counts_are_printed():
    """Runs last in this module: the tally of statuses seen."""
    seen = tally("node fuzz", STATUSES)
    reaffirmed = "POST /v1/nodes/{nodeId}/reservations/{reservationId}/reaffirm 200"
    assert {"PUT /v1/nodes/{nodeId} 201", reaffirmed} <= seen
