"""POST /v1/nodes/{nodeId}/reservations/{id}/cancel, in-process over moto."""

from __future__ import annotations

import json
from types import ModuleType

import pytest

from devstack import fleet_documents as f
from devstack.api_events import cancel_event, event_file, list_units_event, release_event
from devstack.functions import invoke, load_function
from tests.support import state
from tests.support.bodies import comparable, unidentified

pytestmark = pytest.mark.moto

WRITE = ["reservation.read", "reservation.capacity", "reservation.write"]
OWNER = "Bearer vl_local_test_writer"
OPERATOR = "Bearer vl_local_test_op_writer"
UNITS = ["0000:04:00.0", "0000:05:00.0"]


@pytest.fixture(scope="module")
def handler() -> ModuleType:
    return load_function("cancel")


@pytest.fixture
def fleet(load_fleet):
    """node-a: res-1 reserves 04 and 05, both released, a spot VM on 04 and the lab's on 05."""
    load_fleet(
        f.fleet(
            [
                f.node(
                    "node-a",
                    [f.unit(u) for u in UNITS],
                    [f.reservation("res-1", UNITS, releasedUnitIds=UNITS, reason="lab")],
                    [
                        f.workload("vm-spot", [UNITS[0]]),
                        f.workload("vm-lab", [UNITS[1]], tier="reserved", orgId="org-lab"),
                    ],
                )
            ],
            extra_keys=[
                {"key": "vl_local_test_writer", "orgId": "org-acme", "permissions": WRITE},
                {"key": "vl_local_test_op_writer", "orgId": "org-platform", "permissions": WRITE},
                {"key": "vl_local_test_broker_writer", "orgId": "org-broker", "permissions": WRITE},
            ],
        )
    )


def post(handler, body, key=OWNER, node="node-a", res="res-1", idempotency_key=None):
    return invoke(handler, cancel_event(node, res, body, key, idempotency_key))


@pytest.mark.parametrize("key", [OWNER, OPERATOR])
def test_cancel_answers_the_cancelled_reservation(handler, fleet, aws, key):
    result = post(handler, None, key=key)
    assert result.status == 200, result.body_text
    body = result.body
    assert (body["id"], body["status"], body["releasedUnitIds"]) == ("res-1", "cancelled", [])
    assert body["reservedUnitIds"] == UNITS
    stored = state.reservation(aws, "node-a", "res-1")
    assert (stored["status"], stored["releasedUnitIds"], stored["version"]) == (
        "cancelled",
        [],
        2,
    )


def test_its_units_stop_being_governed_and_workloads_keep_running(handler, fleet, aws):
    post(handler, {"reason": "contract ended"})
    listed = invoke(load_function("list_units"), list_units_event("node-a", OWNER)).body
    for unit in listed:
        assert "reservationId" not in unit
        assert "released" not in unit
    assert {u["id"]: u["claimedBy"] for u in listed} == {
        UNITS[0]: "vm:vm-spot",
        UNITS[1]: "vm:vm-lab",
    }
    for workload in ("vm-spot", "vm-lab"):
        assert state.workload(aws, "node-a", workload)["state"] == "running"
    # A release now meets a cancelled reservation.
    release = invoke(
        load_function("release"), release_event("node-a", "res-1", {"unitIds": UNITS}, OWNER)
    )
    assert (release.status, release.body["error"]) == (409, "reservation res-1 is cancelled")


def test_its_event_names_the_caller_reason_and_the_status_it_ended(handler, fleet, aws):
    post(handler, {"reason": "contract ended"})
    [event] = state.reservation_events(aws, "node-a", "res-1")
    assert (event["type"], event["data"]["actor"]["orgId"], event["data"]["reason"]) == (
        "reservation.cancelled",
        "org-acme",
        "contract ended",
    )
    assert event["data"]["previousStatus"] == "active"
    assert "vl_local_test_writer" not in json.dumps(event)


@pytest.mark.parametrize("body", [None, "", "{}", '{"reason": null}'])
def test_an_empty_body_is_fine(handler, fleet, body):
    assert post(handler, body).status == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [('{"reasn": "x"}', "reasn"), ('{"reason": 1}', "reason"), ("[1]", "body")],
)
def test_a_bad_body_is_400_and_changes_nothing(handler, fleet, aws, body, field):
    before = state.whole_table(aws)
    result = post(handler, body)
    assert (result.status, result.body["details"][0]["field"]) == (400, field)
    assert state.whole_table(aws) == before


@pytest.mark.parametrize("status", ["cancelled", "expired"])
def test_an_ended_reservation_is_409_naming_its_status(handler, fleet, aws, status):
    state.set_reservation_status(aws, "node-a", "res-1", status)
    before = state.whole_table(aws)
    result = post(handler, None)
    assert (result.status, unidentified(result.body)) == (
        409,
        {"error": f"reservation res-1 is {status}", "code": "reservation_not_active"},
    )
    assert state.whole_table(aws) == before


def test_a_key_replays_the_first_answer_and_no_body_is_the_same_request_as_an_empty_one(
    handler, fleet, aws
):
    first = post(handler, None, idempotency_key="cancel-1")
    again = post(handler, "{}", idempotency_key="cancel-1")
    assert (again.status, again.body_text) == (200, first.body_text)
    assert len(state.reservation_events(aws, "node-a", "res-1")) == 1
    assert post(handler, None).status == 409  # without the key: it is cancelled already
    reused = post(handler, {"reason": "other"}, idempotency_key="cancel-1")
    assert (reused.status, reused.body["code"]) == (422, "idempotency_key_reused")


@pytest.mark.parametrize(
    ("key", "node", "res"),
    [
        ("Bearer vl_local_test_broker_writer", "node-a", "res-1"),  # manages it: still not allowed
        ("Bearer vl_local_test_owner", "node-a", "res-1"),  # the owner, without reservation.write
        (OWNER, "node-x", "res-1"),
        (OWNER, "node-a", "res-x"),
        (OWNER, "node-a", "res 1"),
    ],
)
def test_everyone_else_gets_the_one_404_byte_for_byte(handler, fleet, aws, key, node, res):
    reference = invoke(load_function("list_units"), list_units_event("node-x", OWNER))
    before = state.whole_table(aws)
    # Who may not, on this node, hears the 404 before the body's 400; an unknown
    # reservation of the owner's node is the later 404, after the body (the contract's order).
    for body in (None,) if res == "res-x" else (None, '{"reasn": "typo"}'):
        result = post(handler, body, key=key, node=node, res=res)
        assert comparable(result) == comparable(reference)
        assert result.status == 404
    assert state.whole_table(aws) == before


@pytest.mark.parametrize("key", [None, "Basic abc", "Bearer vl_nobody"])
def test_401(handler, fleet, key):
    result = post(handler, None, key=key)
    assert (result.status, result.headers["www-authenticate"]) == (401, "Bearer")


@pytest.mark.parametrize(
    ("event_name", "status"),
    [
        ("cancel/no_body.json", 200),
        ("cancel/with_reason.json", 200),
        ("cancel/not_active.json", 409),
        ("cancel/typo_field.json", 400),
        ("cancel/no_permission.json", 404),
    ],
)
def test_the_sam_local_events_against_the_demo_fleet(handler, load_fleet, event_name, status):
    load_fleet(f.demo_fleet())
    result = invoke(handler, event_file(event_name))
    assert result.status == status, result.body_text
