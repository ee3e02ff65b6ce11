"""Schemathesis against the real handlers in-process (moto behind them), every documented
operation at once: valid and invalid keys, real and random ids, valid and mutated bodies; no
5xx, only documented statuses, every body in the documented shape (errors: ErrorBody), and
each error code the one the contract gives its status."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from devstack import fleet_documents as f
from tests.support.fuzzing import FUZZED, api_schema, checked, chooser, fleet_world, tally, with_key

pytestmark = pytest.mark.fuzz

CODES = {
    400: {"invalid_request"},
    415: {"unsupported_media_type"},
    401: {"unauthorized"},
    404: {"not_found"},
    409: {
        "reservation_not_active",
        "conflict",
        "idempotency_in_progress",
        "units_unavailable",
        "plan_stale",
        "not_enough_released",
        "reservation_not_changeable",
    },
    412: {"precondition_failed"},
    422: {"units_not_in_reservation", "idempotency_key_reused", "units_not_reservable"},
}
# Versions a client may send (the current one is "*" here: any other tag is a 412).
IF_MATCH = ["*", '"stale"', 'W/"stale"', '"a", *', "no quotes", ""]
IF_NONE_MATCH = ["*", '"stale"', 'W/"stale"', "no quotes"]
AUTHORIZATIONS = [
    "Bearer vl_local_test_owner",
    "Bearer vl_local_test_broker",
    "Bearer vl_local_test_operator",
    "Bearer vl_local_test_writer",  # reservation.write: creates
    "Bearer vl_local_test_stranger",
    "Bearer vl_unknown_key",
    "Basic dmw6eA==",
    None,
]
STATUSES: Counter[str] = Counter()
RES_UNITS = [f"0000:0{i}:00.0" for i in range(4, 9)]  # res-1's, all lent
FREE_UNITS = ["0000:09:00.0", "0000:0a:00.0"]
SPARE = [f"res-{n}" for n in range(2, 30)]
# Every function the OpenAPI document is made from: each documented route is fuzzed.
schema = api_schema()


@pytest.fixture(scope="module")
def world() -> Iterator[None]:
    # res-1 for reclaim and release; pending ones for cancel to end, so that res-1 lives.
    spare = [f.reservation(r, [FREE_UNITS[0]], status="pending", startsAt=f.days(400 + n),
                           endsAt=f.days(401 + n)) for n, r in enumerate(SPARE)]  # fmt: skip
    fleet = f.fleet([f.node(
        "node-a",
        [f.unit(u) for u in [*RES_UNITS, *FREE_UNITS]],
        [f.reservation("res-1", RES_UNITS, releasedUnitIds=RES_UNITS), *spare],
        [f.workload(f"vm-{i}", [u]) for i, u in enumerate(RES_UNITS[:3])],
    )], extra_keys=[{"key": "vl_local_test_writer", "orgId": "org-acme",
                     "permissions": ["reservation.read", "reservation.write"]}])  # fmt: skip
    with fleet_world(fleet):
        yield


def _aim(case: Any) -> None:
    """Half the cases at the real node and reservation, with a mix of keys."""
    choose = chooser(case)
    authorization = choose.choice(AUTHORIZATIONS)
    if choose.random() < 0.5:
        case.path_parameters["nodeId"] = "node-a"
        cancel = case.operation.path.endswith("/cancel")
        create = case.operation.path.endswith("/reservations") and case.method == "POST"
        if "reservationId" in case.path_parameters:
            case.path_parameters["reservationId"] = choose.choice(SPARE) if cancel else "res-1"
        if isinstance(case.body, dict) and choose.random() < 0.6:
            _plausible(case.body, choose, create)
            if create:  # by the owner, who may
                authorization = "Bearer vl_local_test_writer"
    _versions(case, choose)
    with_key(case, authorization)


def _versions(case: Any, choose: random.Random) -> None:
    """A share of the cases with If-Match (the writes that honour it) or If-None-Match (a
    reservation's GET): the tags any, stale, weak, malformed."""
    names = {p["name"].lower() for p in case.operation.definition.raw.get("parameters", [])}
    headers = dict(case.headers or {})
    for name, values in (("if-match", IF_MATCH), ("if-none-match", IF_NONE_MATCH)):
        if name in names and choose.random() < 0.4:
            headers[name] = choose.choice(values)
    case.headers = headers


def _plausible(body: dict[str, Any], choose: random.Random, create: bool) -> None:
    """Units the call may take (res-1's for reclaim and release), and for a create a term
    of its own: so that a share of the cases get past validation and write."""
    if "unitIds" in body:
        body["unitIds"] = choose.sample(FREE_UNITS if create else RES_UNITS, choose.randint(1, 2))
    if "noticeSeconds" in body:  # a notice that is taken, now and then at its ends
        body["noticeSeconds"] = choose.choice([0, 3600, choose.randint(0, 3600)])
    if create:
        starts = choose.randrange(1, 10**5)
        body.update(startsAt=f.days(starts / 24), endsAt=f.days((starts + 1) / 24))


@schema.parametrize()
@FUZZED
def test_the_api_never_breaks_its_contract(case, world):
    _aim(case)
    checked(case, CODES, STATUSES)


def test_fuzz_counts_are_printed():
    """Runs last in this module: the tally of statuses seen (``make fuzz`` shows it)."""
    tally("fuzz", STATUSES)
