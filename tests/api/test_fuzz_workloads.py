"""Schemathesis against the platform scheduler's operations (place, end), in-process over
moto: no 5xx, only documented statuses and shapes, each error code the contract's for its
status."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from devstack import fleet_documents as f
from reservations.workloads import endpoints as workloads
from tests.support.fuzzing import FUZZED, api_schema, checked, chooser, fleet_world, tally, with_key

pytestmark = pytest.mark.fuzz

CODES = {
    400: {"invalid_request"},
    415: {"unsupported_media_type"},
    401: {"unauthorized"},
    404: {"not_found"},
    409: {
        "units_unavailable",
        "workload_exists",
        "conflict",
        "not_enough_units",  # a placement with reservationId (a take-back)
        "reservation_not_active",
    },
    422: {
        "units_not_sellable",
        "idempotency_key_reused",
        "unknown_reservation",
        "org_not_in_audience",
    },
}
UNITS = [f"0000:{i:02x}:00.0" for i in range(4, 20)]  # 0a-0d free, reserved by nothing
# The workloads the fleet starts with, on 04, 05 and 0e-13: what an end may find.
ENDABLE = ["vm-0", "vm-1", *(f"pod-{i}" for i in range(6))]
AUTHORIZATIONS = [
    "Bearer vl_local_test_scheduler",
    "Bearer vl_local_test_scheduler",
    "Bearer vl_local_test_operator",  # the operator, without workload.place
    "Bearer vl_local_test_owner_places",  # workload.place, not the operator
    "Bearer vl_unknown_key",
    None,
]
STATUSES: Counter[str] = Counter()
schema = api_schema(workloads.ENDPOINTS[:2])


@pytest.fixture(scope="module")
def world() -> Iterator[None]:
    keys = [
        {
            "key": "vl_local_test_scheduler",
            "orgId": "org-platform",
            "permissions": ["workload.place"],
        },
        {
            "key": "vl_local_test_owner_places",
            "orgId": "org-acme",
            "permissions": ["workload.place"],
        },
    ]
    fleet = f.fleet([f.node(
        "node-a",
        [f.unit(u, sellable=u != UNITS[5]) for u in UNITS],
        [f.reservation("res-1", UNITS[:3], releasedUnitIds=UNITS[:2]),
         f.reservation("res-2", [UNITS[3]], status="needs-review")],
        [*(f.workload(f"vm-{i}", [u]) for i, u in enumerate(UNITS[:2])),
         *(f.workload(f"pod-{i}", [u], kind="pod") for i, u in enumerate(UNITS[10:]))],
    )], keys)  # fmt: skip
    with fleet_world(fleet):
        yield


def _aim(case: Any) -> None:
    """Half the cases at the real node, its units and workloads, with a mix of keys."""
    choose = chooser(case)
    if choose.random() < 0.5:
        case.path_parameters["nodeId"] = "node-a"
        if "workloadId" in case.path_parameters:
            case.path_parameters["workloadId"] = choose.choice([*ENDABLE, "vm-x"])
        if isinstance(case.body, dict) and choose.random() < 0.7:
            case.body["unitIds"] = choose.sample(UNITS, choose.randint(1, 2))
        if isinstance(case.body, dict) and choose.random() < 0.6:  # a placement that may land
            case.body.update(id=f"vm-{choose.randrange(10**6)}", kind="vm", tier="spot",
                             orgId="org-spotbuyer", unitIds=[choose.choice(UNITS[6:10])])  # fmt: skip
    with_key(case, choose.choice(AUTHORIZATIONS))


@schema.parametrize()
@FUZZED
def test_the_scheduler_operations_never_break_the_contract(case, world):
    _aim(case)
    checked(case, CODES, STATUSES)


def test_workload_fuzz_counts_are_printed():
    """Runs last in this module: the tally of statuses seen."""
    seen = tally("workload fuzz", STATUSES)
    assert {
        "POST /v1/nodes/{nodeId}/workloads 201",
        "DELETE /v1/nodes/{nodeId}/workloads/{workloadId} 204",
    } <= seen
