"""`sam local invoke` of release and cancel with the shipped events (events/) against the demo
fleet: each function in the Lambda container, as deployed (the table through the emulator)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.local.test_sam_invoke import Invocation, assert_contract_error, sam_invoke
from tests.support.e2e import TIMINGS, Emulator, sam_env_vars

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def invoke(
    sam_built: None, demo_emulator: Emulator, tmp_path_factory: pytest.TempPathFactory
) -> Any:
    """Invoke an event (the demo fleet's state carries over, in the order the tests ask)."""
    directory: Path = tmp_path_factory.mktemp("sam-changes")
    env_vars = sam_env_vars(demo_emulator.port, directory)
    sam_tmp = directory / "tmp"
    sam_tmp.mkdir()

    def run(event: str) -> Invocation:
        invocation = sam_invoke(event, env_vars, demo_emulator, sam_tmp)
        key = "sam local invoke (slowest)"
        TIMINGS[key] = max(TIMINGS.get(key, 0.0), invocation.seconds)
        return invocation

    return run


def test_release_lends_unit_07_and_its_dry_run_says_so_first(invoke: Any) -> None:
    dry = invoke("release/dry_run")
    assert dry.status == 200, dry.body_text
    assert "0000:07:00.0" in dry.body["releasedUnitIds"]
    released = invoke("release/real_run")
    assert released.status == 200, released.body_text
    assert released.body["releasedUnitIds"] == dry.body["releasedUnitIds"]
    assert released.headers["content-type"] == "application/json"


def test_release_refuses_units_outside_and_reservations_not_active(invoke: Any) -> None:
    outside = invoke("release/not_in_reservation")
    assert_contract_error(outside, 422, "units_not_in_reservation")
    assert "0000:0c:00.0" in outside.body["error"]
    expired = invoke("release/not_active")
    assert_contract_error(expired, 409, "reservation_not_active")
    assert expired.body["error"] == "reservation res-b-expired is expired"


def test_cancel_with_no_body_and_with_a_reason(invoke: Any) -> None:
    for event, reservation in (
        ("cancel/no_body", "res-a-pending"),
        ("cancel/with_reason", "res-b-started"),
    ):
        cancelled = invoke(event)
        assert cancelled.status == 200, cancelled.body_text
        assert (cancelled.body["id"], cancelled.body["status"]) == (reservation, "cancelled")
        assert cancelled.body["releasedUnitIds"] == []


def test_cancel_refusals(invoke: Any) -> None:
    assert_contract_error(invoke("cancel/not_active"), 409, "reservation_not_active")
    assert_contract_error(invoke("cancel/typo_field"), 400, "invalid_request")
    assert_contract_error(invoke("cancel/no_permission"), 404, "not_found")
