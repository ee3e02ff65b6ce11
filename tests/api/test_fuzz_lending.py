"""Schemathesis against a reservation's lending policy (PUT and DELETE), in-process over
moto: no 5xx, only documented statuses and shapes, each error code the contract's for its
status."""

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
    412: {"precondition_failed"},
    415: {"unsupported_media_type"},
    401: {"unauthorized"},
    404: {"not_found"},
    409: {"reservation_not_changeable", "conflict"},
}
AUTHORIZATIONS = [
    "Bearer vl_local_test_broker",  # manages res-1 and res-old
    "Bearer vl_local_test_owner",
    "Bearer vl_local_test_operator",
    "Bearer vl_local_test_lab",  # the audience: may not
    "Bearer vl_local_test_stranger",
    "Bearer vl_unknown_key",
    None,
]
STATUSES: Counter[str] = Counter()
UNITS = [f"0000:0{i}:00.0" for i in range(4, 8)]
schema = api_schema([endpoints.SET_LENDING, endpoints.CLEAR_LENDING])


@pytest.fixture(scope="module")
def world() -> Iterator[None]:
    reservations = [
        f.reservation("res-1", UNITS[:3], releasedUnitIds=UNITS[:1]),
        f.reservation("res-old", UNITS[3:], startsAt=f.days(-20), endsAt=f.days(-1)),
    ]
    with fleet_world(f.fleet([f.node("node-a", [f.unit(u) for u in UNITS], reservations)])):
        yield


def _aim(case: Any) -> None:
    """Most cases at the real node and reservations, a mix of keys."""
    choose = chooser(case)
    if choose.random() < 0.7:
        case.path_parameters["nodeId"] = "node-a"
        case.path_parameters["reservationId"] = choose.choice(["res-1", "res-1", "res-old"])
    with_key(case, choose.choice(AUTHORIZATIONS))


@schema.parametrize()
@FUZZED
def test_the_lending_policy_never_breaks_the_contract(case, world):
    _aim(case)
    checked(case, CODES, STATUSES)


def test_lending_fuzz_counts_are_printed():
    """Runs last in this module: the tally of statuses seen."""
    tally("lending policy fuzz", STATUSES)
