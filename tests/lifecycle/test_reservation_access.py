"""Create, get and list reservations: unknown, invisible and not permitted are one 404,
byte for byte and header for header, and a write never reaches the table for them."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import create_event, get_event, list_event, list_units_event
from devstack.functions import invoke, load_function
from tests.support import state
from tests.support.bodies import comparable

pytestmark = pytest.mark.moto

WRITE = ["reservation.read", "reservation.write", "reservation.capacity"]
KEYS = [
    {"key": "vl_local_test_writer", "orgId": "org-acme", "permissions": WRITE},
    {"key": "vl_local_test_other_owner", "orgId": "org-globex", "permissions": WRITE},
    {
        "key": "vl_local_test_owner_no_read",
        "orgId": "org-acme",
        "permissions": ["reservation.write"],
    },
]
BODY = {"unitIds": ["0000:05:00.0"], "allowedOrgIds": ["org-lab"]}


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    names = ("create_reservation", "get_reservation", "list_reservations", "list_units")
    return {name: load_function(name) for name in names}


@pytest.fixture
def fleet(load_fleet):
    units = [f.unit("0000:04:00.0"), f.unit("0000:05:00.0")]
    nodes = [
        f.node("node-a", units, [f.reservation("res-1", ["0000:04:00.0"])]),
        f.node("node-g", units, [f.reservation("res-g", ["0000:04:00.0"])], owner="org-globex"),
    ]
    load_fleet(f.fleet(nodes, extra_keys=KEYS))


def _answer(result: Any) -> tuple[int, tuple[tuple[str, str], ...], str]:
    """Status, headers and body, the request's own id aside (its X-Request-Id, and the
    error body's requestId): what must not tell two refusals apart."""
    status, headers, body = comparable(result)
    return status, tuple(sorted(headers.items())), json.dumps(body, sort_keys=True)


CASES = {
    "create": [
        ("Bearer vl_local_test_writer", "node-unknown"),
        ("Bearer vl_local_test_writer", "node-g"),  # another org's node
        ("Bearer vl_local_test_broker", "node-a"),  # manages res-1, but cannot create
        ("Bearer vl_local_test_lab", "node-a"),  # the audience, no reservation.write
        ("Bearer vl_local_test_writer", "node%20a"),
    ],
    "get": [
        ("Bearer vl_local_test_writer", "node-unknown", "res-1"),
        ("Bearer vl_local_test_writer", "node-a", "res-g"),  # on another node
        ("Bearer vl_local_test_stranger", "node-a", "res-1"),
        ("Bearer vl_local_test_owner_no_read", "node-a", "res-1"),
        ("Bearer vl_local_test_writer", "node-a", "res 1"),
    ],
    "list": [
        ("Bearer vl_local_test_writer", "node-unknown"),
        ("Bearer vl_local_test_stranger", "node-a"),
        ("Bearer vl_local_test_owner_no_read", "node-a"),
        ("Bearer vl_local_test_other_owner", "node-a"),
    ],
}


def test_every_refusal_of_the_reservation_endpoints_is_the_one_404(functions, fleet, aws):
    reference = _answer(
        invoke(functions["list_units"], list_units_event("node-x", "Bearer vl_local_test_writer"))
    )
    before = state.whole_table(aws)
    answers = set()
    for key, node in CASES["create"]:
        for body in (BODY, {"unitIds": "not a list"}):  # the 404 comes before the body's 400
            event = create_event(node, body, key, "k")
            answers.add(_answer(invoke(functions["create_reservation"], event)))
    for key, node, res in CASES["get"]:
        answers.add(_answer(invoke(functions["get_reservation"], get_event(node, res, key))))
    for key, node in CASES["list"]:
        answers.add(_answer(invoke(functions["list_reservations"], list_event(node, key))))
    assert answers == {reference}
    assert reference[0] == 404
    assert state.whole_table(aws) == before  # not even an idempotency record
