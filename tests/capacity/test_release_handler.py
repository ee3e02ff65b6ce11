"""POST /v1/nodes/{nodeId}/reservations/{id}/release, in-process over moto."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import event_file, list_units_event, release_event
from devstack.functions import invoke, load_function
from reservations.kernel.aws import clients
from tests.support import state
from tests.support.bodies import comparable
from tests.support.faults import on_call

pytestmark = pytest.mark.moto

BROKER = "Bearer vl_local_test_broker"
UNITS = ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0", "0000:07:00.0"]


@pytest.fixture(scope="module")
def handler() -> ModuleType:
    return load_function("release")


@pytest.fixture
def fleet(load_fleet):
    """node-a: res-1 reserves 04-07 with 04 released; a spot VM on 04, the lab's VM on 06."""
    load_fleet(
        f.fleet(
            [
                f.node(
                    "node-a",
                    [f.unit(u) for u in [*UNITS, "0000:08:00.0"]],
                    [f.reservation("res-1", UNITS, releasedUnitIds=[UNITS[0]], reason="lab")],
                    [
                        f.workload("vm-spot", [UNITS[0]]),
                        f.workload("vm-lab", [UNITS[2]], tier="reserved", orgId="org-lab"),
                    ],
                ),
                f.node("node-b", [f.unit(UNITS[0])], [f.reservation("res-b", [UNITS[0]])]),
            ]
        )
    )


def post(handler, body, key=BROKER, node="node-a", res="res-1", idempotency_key=None):
    return invoke(handler, release_event(node, res, body, key, idempotency_key))


def test_release_answers_the_reservation_object_after_the_call(handler, fleet, aws):
    result = post(handler, {"unitIds": [UNITS[2], UNITS[1].upper()], "reason": "spare"})
    assert result.status == 200, result.body_text
    assert result.headers["content-type"] == "application/json"
    body = result.body
    assert body["releasedUnitIds"] == UNITS[:3]
    assert (body["id"], body["nodeId"], body["status"], body["reason"]) == (
        "res-1",
        "node-a",
        "active",
        "lab",
    )
    assert set(body) >= {"startsAt", "endsAt", "createdAt", "updatedAt", "reservedUnitIds"}
    assert not set(body) & {"terminated", "skipped", "wouldTerminate", "wouldSkip"}
    stored = state.reservation(aws, "node-a", "res-1")
    assert (stored["releasedUnitIds"], stored["version"]) == (UNITS[:3], 2)
    assert stored["updatedAt"] == body["updatedAt"]
    # Nothing running is touched: the lab's VM keeps 06 until it is free.
    assert state.workload(aws, "node-a", "vm-lab")["state"] == "running"
    assert state.unit(aws, "node-a", UNITS[2])["claimedBy"] == "vm:vm-lab"


def test_the_released_units_list_as_released(handler, fleet):
    post(handler, {"unitIds": [UNITS[1], UNITS[2]]})
    listed = invoke(load_function("list_units"), list_units_event("node-a", BROKER)).body
    released = {u["id"]: u.get("released") for u in listed}
    assert released == {
        UNITS[0]: True,
        UNITS[1]: True,
        UNITS[2]: True,
        UNITS[3]: False,
        "0000:08:00.0": None,
    }


def test_its_event_names_the_caller_reason_units_and_releases(handler, fleet, aws):
    post(handler, {"unitIds": [UNITS[3]], "reason": "because"})
    [event] = state.reservation_events(aws, "node-a", "res-1")
    data = event["data"]
    assert (event["type"], data["actor"]["orgId"], data["reason"]) == (
        "reservation.released",
        "org-broker",
        "because",
    )
    assert data["actor"]["keyId"].startswith("key-")
    assert "vl_local_test_broker" not in json.dumps(event)
    assert data["unitIds"] == [UNITS[3]]
    assert data["releasedUnitIds"] == [UNITS[0], UNITS[3]]


def test_releasing_released_units_writes_nothing_but_its_event(handler, fleet, aws):
    before = state.reservation(aws, "node-a", "res-1")
    result = post(handler, {"unitIds": [UNITS[0]]})
    assert result.status == 200
    assert state.reservation(aws, "node-a", "res-1") == before  # not even updatedAt
    [event] = state.reservation_events(aws, "node-a", "res-1")
    assert event["data"]["releasedUnitIds"] == [UNITS[0]]


def test_a_dry_run_changes_nothing_and_answers_as_it_would_be(handler, fleet, aws):
    before = state.whole_table(aws)
    result = post(handler, {"unitIds": [UNITS[3]], "dryRun": True}, idempotency_key="\tbad")
    assert result.status == 200
    assert result.body["releasedUnitIds"] == [UNITS[0], UNITS[3]]
    assert state.whole_table(aws) == before


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"unitIds": ["0000:08:00.0", "0000:09:00.0"]}, 422, "units_not_in_reservation"),
        ({"unitIds": [UNITS[0]], "dryrun": True}, 400, "invalid_request"),
        ({"unitIds": []}, 400, "invalid_request"),
    ],
)
def test_refusals_change_nothing(handler, fleet, aws, body, status, code):
    before = state.whole_table(aws)
    result = post(handler, body)
    assert (result.status, result.body["code"]) == (status, code)
    if status == 422:
        assert "0000:08:00.0, 0000:09:00.0" in result.body["error"]
    assert state.whole_table(aws) == before


@pytest.mark.parametrize("status", ["cancelled", "needs-review", "expired"])
def test_a_reservation_that_is_not_active_is_409_naming_its_status(handler, fleet, aws, status):
    state.set_reservation_status(aws, "node-a", "res-1", status)
    before = state.whole_table(aws)
    result = post(handler, {"unitIds": [UNITS[1]]})
    assert (result.status, result.body["code"]) == (409, "reservation_not_active")
    assert result.body["error"] == f"reservation res-1 is {status}"
    assert state.whole_table(aws) == before


def test_the_same_key_replays_the_first_answer_byte_for_byte(handler, fleet, aws):
    first = post(handler, {"unitIds": [UNITS[1]], "reason": "r"}, idempotency_key="rel-1")
    again = post(handler, {"reason": "r", "unitIds": [UNITS[1].upper()]}, idempotency_key="rel-1")
    assert (again.status, again.body_text) == (first.status, first.body_text)
    assert len(state.reservation_events(aws, "node-a", "res-1")) == 1
    reused = post(handler, {"unitIds": [UNITS[2]]}, idempotency_key="rel-1")
    assert (reused.status, reused.body["code"]) == (422, "idempotency_key_reused")


def test_a_lost_race_is_read_again_and_both_writes_land(handler, fleet, aws):
    """Another release commits between this one's read and its write."""
    done = []

    def concurrent_release(_params: dict[str, Any]) -> None:
        if not done:
            done.append(True)
            assert post(handler, {"unitIds": [UNITS[3]]}).status == 200

    with on_call(clients.dynamodb(), "TransactWriteItems", before=concurrent_release):
        result = post(handler, {"unitIds": [UNITS[1]]})
    assert result.status == 200
    assert result.body["releasedUnitIds"] == [UNITS[0], UNITS[1], UNITS[3]]
    assert len(state.reservation_events(aws, "node-a", "res-1")) == 2


@pytest.mark.parametrize(
    ("event_name", "status"),
    [
        ("release/real_run.json", 200),
        ("release/dry_run.json", 200),
        ("release/not_in_reservation.json", 422),
        ("release/not_active.json", 409),
    ],
)
def test_the_sam_local_events_against_the_demo_fleet(handler, load_fleet, event_name, status):
    load_fleet(f.demo_fleet())
    result = invoke(handler, event_file(event_name))
    assert result.status == status, result.body_text


@pytest.mark.parametrize(
    ("key", "node", "res"),
    [
        ("Bearer vl_local_test_stranger", "node-a", "res-1"),
        ("Bearer vl_local_test_lab", "node-a", "res-1"),  # the audience may not lend its units
        (BROKER, "node-x", "res-1"),
        (BROKER, "node-a", "res-b"),  # on another node
        (BROKER, "node-a", "res 1"),
    ],
)
def test_everyone_else_gets_the_one_404_byte_for_byte(handler, fleet, aws, key, node, res):
    reference = invoke(load_function("list_units"), list_units_event("node-x", BROKER))
    before = state.whole_table(aws)
    for body in ({"unitIds": [UNITS[1]]}, {"unitIds": "bad"}):  # the 404 before a 400
        result = post(handler, body, key=key, node=node, res=res)
        assert comparable(result) == comparable(reference)
        assert result.status == 404
    assert state.whole_table(aws) == before
