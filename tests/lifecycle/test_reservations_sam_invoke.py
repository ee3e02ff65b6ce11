"""`sam local invoke` of create, get and list with the shipped events (events/) against the
demo fleet: each function in the Lambda container, as deployed (the cursor key from the
environment, the table through the emulator)."""

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
    """Invoke an event once (in the order the tests ask); later calls reuse the answer."""
    directory: Path = tmp_path_factory.mktemp("sam-reservations")
    env_vars = sam_env_vars(demo_emulator.port, directory)
    sam_tmp = directory / "tmp"
    sam_tmp.mkdir()
    seen: dict[str, Invocation] = {}

    def run(event: str) -> Invocation:
        if event not in seen:
            seen[event] = sam_invoke(event, env_vars, demo_emulator, sam_tmp)
            key = "sam local invoke (slowest)"
            TIMINGS[key] = max(TIMINGS.get(key, 0.0), seen[event].seconds)
        return seen[event]

    return run


def test_create_is_201_with_location_then_the_same_units_are_unavailable(invoke: Any) -> None:
    created = invoke("create_reservation/created")
    assert created.status == 201, created.body_text
    body = created.body
    assert created.headers["location"] == f"/v1/nodes/node-a1/reservations/{body['id']}"
    assert (body["status"], body["reservedUnitIds"], body["releasedUnitIds"]) == (
        "active", ["0000:0c:00.0"], [],
    )  # fmt: skip
    again = invoke("create_reservation/overlapping")
    assert_contract_error(again, 409, "units_unavailable")
    problems = {d["field"]: d["problem"] for d in again.body["details"]}
    # Open-ended from now, 0c meets both the one just made and the demo's 2035 one.
    assert problems["unitIds[0]"].startswith("0000:0c:00.0: held by reservation res-")
    assert problems["unitIds[1]"].startswith("0000:04:00.0: held by reservation res-a-active")


def test_create_refuses_units_that_cannot_be_reserved_and_unknown_fields(invoke: Any) -> None:
    refused = invoke("create_reservation/not_reservable")
    assert_contract_error(refused, 422, "units_not_reservable")
    assert [d["field"] for d in refused.body["details"]] == ["unitIds[0]", "unitIds[1]"]
    assert_contract_error(invoke("create_reservation/typo_field"), 400, "invalid_request")


def test_get_and_list_show_what_the_caller_may_see(invoke: Any) -> None:
    one = invoke("get_reservation/visible")
    assert (one.status, one.body["id"], one.body["status"]) == (200, "res-a-active", "active")
    page = invoke("list_reservations/owner")
    assert page.status == 200, page.body_text
    assert len(page.body["items"]) == 1  # limit=1 of the node's reservations
    assert page.body["nextCursor"]
    pending = invoke("list_reservations/filtered")
    assert [r["id"] for r in pending.body["items"]] == ["res-a-pending"]


def test_the_reads_answer_one_404_to_a_stranger(invoke: Any) -> None:
    get, listing = invoke("get_reservation/stranger"), invoke("list_reservations/stranger")
    assert_contract_error(get, 404, "not_found")
    assert (get.headers, get.body_text) == (listing.headers, listing.body_text)
