"""Place and end: unknown, not an operator, no workload.place and malformed are one 404,
byte for byte and header for header, before the body is read; nothing is written."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import end_event, list_units_event, place_event
from devstack.functions import invoke, load_function
from tests.support import state
from tests.support.bodies import comparable

pytestmark = pytest.mark.moto

KEYS = [
    {"key": "vl_local_test_scheduler", "orgId": "org-platform", "permissions": ["workload.place"]},
    {"key": "vl_local_test_owner_places", "orgId": "org-acme", "permissions": ["workload.place"]},
]
BODY = {"id": "vm-new", "kind": "vm", "tier": "spot", "orgId": "org-x", "unitIds": ["0000:04:00.0"]}
SCHEDULER = "Bearer vl_local_test_scheduler"


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    return {name: load_function(name) for name in ("place_workload", "end_workload", "list_units")}


@pytest.fixture
def fleet(load_fleet):
    units = [f.unit("0000:04:00.0"), f.unit("0000:05:00.0")]
    workloads = [f.workload("vm-old", ["0000:05:00.0"])]
    load_fleet(f.fleet([f.node("node-a", units, [], workloads)], extra_keys=KEYS))


def _answer(result: Any) -> tuple[int, tuple[tuple[str, str], ...], str]:
    """Status, headers and body, the request's own id aside (its X-Request-Id, and the
    error body's requestId): what must not tell two refusals apart."""
    status, headers, body = comparable(result)
    return status, tuple(sorted(headers.items())), json.dumps(body, sort_keys=True)


@pytest.mark.parametrize(
    ("key", "node", "workload"),
    [
        (SCHEDULER, "node-zz", "vm-old"),  # unknown node
        (SCHEDULER, "node-a", "vm-nope"),  # unknown workload (end only)
        (
            "Bearer vl_local_test_owner_places",
            "node-a",
            "vm-old",
        ),  # the permission, not the operator
        ("Bearer vl_local_test_operator", "node-a", "vm-old"),  # the operator, not the permission
        (SCHEDULER, "node a", "vm-old"),  # malformed ids
        (SCHEDULER, "node-a", "vm 1"),
    ],
)
def test_every_refusal_of_place_and_end_is_the_one_404(functions, fleet, aws, key, node, workload):
    reference = _answer(invoke(functions["list_units"], list_units_event("node-zz", key)))
    before = state.whole_table(aws)
    ended = invoke(functions["end_workload"], end_event(node, workload, key))
    assert _answer(ended) == reference
    if workload == "vm-old":  # place has no workload in its path
        for body in (BODY, "{not json"):  # the 404 comes before the 400
            placed = invoke(functions["place_workload"], place_event(node, body, key))
            if node == "node-zz" and body != BODY:
                continue  # a malformed body on a node that does not exist is a 400 first
            assert _answer(placed) == reference
    assert state.whole_table(aws) == before
