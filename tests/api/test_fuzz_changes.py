"""Schemathesis against release and cancel, in-process over moto: no 5xx, only documented
statuses and shapes, each error code the contract's for its status."""

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
    409: {"reservation_not_active", "conflict"},
    422: {"units_not_in_reservation", "idempotency_key_reused"},
}
WRITE = ["reservation.read", "reservation.capacity", "reservation.write"]
AUTHORIZATIONS = [
    "Bearer vl_local_test_writer",  # the owner, may cancel
    "Bearer vl_local_test_broker",  # manages res-1: may release
    "Bearer vl_local_test_operator",
    "Bearer vl_local_test_stranger",
    "Bearer vl_unknown_key",
    None,
]
STATUSES: Counter[str] = Counter()
UNITS = [f"0000:0{i}:00.0" for i in range(4, 9)]
schema = api_schema([endpoints.RELEASE, endpoints.CANCEL])


@pytest.fixture(scope="module")
def world() -> Iterator[None]:
    # Many reservations, so that cancels keep finding live ones to end.
    reservations = [f.reservation("res-1", UNITS, releasedUnitIds=UNITS[:2])] + [
        f.reservation(f"res-{n}", [UNITS[n % 5]], status="pending", startsAt=f.days(30 + n),
                      endsAt=f.days(31 + n))
        for n in range(2, 40)
    ]  # fmt: skip
    keys = [{"key": "vl_local_test_writer", "orgId": "org-acme", "permissions": WRITE}]
    with fleet_world(f.fleet([f.node("node-a", [f.unit(u) for u in UNITS], reservations)], keys)):
        yield


def _aim(case: Any) -> None:
    """Most cases at the real node and reservations, with a mix of keys."""
    choose = chooser(case)
    if choose.random() < 0.7:
        case.path_parameters["nodeId"] = "node-a"
        case.path_parameters["reservationId"] = f"res-{choose.choice([1, 1, *range(2, 40)])}"
        if isinstance(case.body, dict) and choose.random() < 0.6:  # res-1's own units
            case.body["unitIds"] = choose.sample(UNITS, choose.randint(1, 2))
    with_key(case, choose.choice(AUTHORIZATIONS))


@schema.parametrize()
@FUZZED
def test_release_and_cancel_never_break_the_contract(case, world):
    _aim(case)
    checked(case, CODES, STATUSES)


def test_release_and_cancel_fuzz_counts_are_printed():
    """Runs last in this module: the tally of statuses seen."""
    tally("release/cancel fuzz", STATUSES)
