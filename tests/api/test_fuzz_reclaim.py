"""Schemathesis against reclaim's three bodies, in-process over moto: ``unitIds``, ``count``
(with and without an Idempotency-Key) and ``planId`` (fresh plans from a dry run, tampered
ones, plans gone stale), each mutated: no 5xx, only documented statuses and shapes, each
error code the contract's for its status."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import reclaim_event
from devstack.functions import invoke, load_function
from reservations import endpoints
from tests.support.fuzzing import FUZZED, api_schema, checked, chooser, fleet_world, tally, with_key

pytestmark = pytest.mark.fuzz

CODES = {
    400: {"invalid_request"},
    415: {"unsupported_media_type"},
    401: {"unauthorized"},
    404: {"not_found"},
    409: {"reservation_not_active", "conflict", "plan_stale", "not_enough_released"},
    412: {"precondition_failed"},
    422: {"units_not_in_reservation", "idempotency_key_reused"},
}
BROKER = "Bearer vl_local_test_broker"
AUTHORIZATIONS = [BROKER, BROKER, "Bearer vl_local_test_operator", "Bearer vl_local_test_stranger"]
STATUSES: Counter[str] = Counter()
UNITS = [f"0000:{i:02x}:00.0" for i in range(4, 16)]
schema = api_schema([endpoints.RECLAIM])


@pytest.fixture(scope="module")
def world() -> Iterator[None]:
    # Many units lent, so that counts keep finding some for a while; spot VMs on a few.
    fleet = f.fleet([f.node(
        "node-a",
        [f.unit(u) for u in UNITS],
        [f.reservation("res-1", UNITS, releasedUnitIds=UNITS)],
        [f.workload(f"vm-{i}", [u]) for i, u in enumerate(UNITS[:4])],
    )])  # fmt: skip
    with fleet_world(fleet):
        yield


def _fresh_plan(count: int) -> str | None:
    """A dry run's plan by ``count``, as the broker gets it now (None when it is refused)."""
    event = reclaim_event("node-a", "res-1", {"count": count, "dryRun": True}, BROKER)
    answer = invoke(load_function("reclaim"), event)
    return answer.body.get("planId") if answer.status == 200 else None


def _aim(case: Any) -> None:
    """Most cases at res-1, as one of the three bodies, some keyed."""
    choose = chooser(case)
    authorization = choose.choice(AUTHORIZATIONS)
    if choose.random() < 0.8:
        case.path_parameters.update(nodeId="node-a", reservationId="res-1")
        body = case.body if isinstance(case.body, dict) else None
        if body is not None and choose.random() < 0.7:
            for way in ("unitIds", "count", "planId"):
                body.pop(way, None)
            shape = choose.choice(["count", "count", "plan", "plan", "tampered", "units"])
            if shape == "count":
                body["count"] = choose.randint(1, 8)
            elif shape == "units":
                body["unitIds"] = choose.sample(UNITS, choose.randint(1, 3))
            else:
                plan = _fresh_plan(choose.randint(1, 3)) or "x.y"
                if shape == "tampered":
                    plan = plan[:-1] + ("A" if plan[-1] != "A" else "B")
                body.clear()
                body["planId"] = plan
        if choose.random() < 0.5:
            case.headers = {**(case.headers or {}), "Idempotency-Key": f"fz-{choose.random()}"}
    with_key(case, authorization)


@schema.parametrize()
@FUZZED
def test_reclaim_never_breaks_its_contract_whatever_the_body(case, world):
    _aim(case)
    checked(case, CODES, STATUSES)


def test_fuzz_counts_are_printed():
    """Runs last in this module: the tally of statuses seen; the three bodies got past
    validation to a decision."""
    seen = tally("fuzz reclaim", STATUSES)
    assert any(s.endswith(" 200") for s in seen)
