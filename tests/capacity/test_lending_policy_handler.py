"""PUT and DELETE /v1/nodes/{nodeId}/reservations/{id}/lending, in-process over moto: the
policy on the reservation object and in its ETag, its event, the defaults, the writes that
are not made, the one 404, the refusals, If-Match."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import api_event, get_event, list_units_event, sample
from devstack.functions import invoke, load_function
from reservations import endpoints
from tests.support import event_scenario as s
from tests.support import state
from tests.support.bodies import comparable

pytestmark = pytest.mark.moto

BROKER = "Bearer vl_local_test_broker"  # a manager of res-1
OWNER = "Bearer vl_local_test_owner"
U4, U5, U6 = "0000:04:00.0", "0000:05:00.0", "0000:06:00.0"
DEFAULTS = {
    "auto": True,
    "idleSeconds": 900,
    "keepUnlent": 0,
    "noticeSeconds": 0,
    "minRunSeconds": 0,
    "relendAfterSeconds": 300,
}


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    names = ("set_lending", "clear_lending", "get_reservation", "list_units")
    return {name: load_function(name) for name in names}


@pytest.fixture
def fleet(load_fleet):
    """node-a: res-1 (active, 04 and 05, managed by org-broker, for org-lab); res-old
    (expired, 06)."""
    load_fleet(
        s.with_feed_permissions(
            f.fleet(
                [
                    f.node(
                        "node-a",
                        [f.unit(u) for u in (U4, U5, U6)],
                        [
                            f.reservation("res-1", [U4, U5], releasedUnitIds=[U4]),
                            f.reservation(
                                "res-later",
                                [U6],
                                status="pending",
                                startsAt=f.days(400),
                                endsAt=f.days(410),
                            ),
                            f.reservation("res-old", [U6], startsAt=f.days(-20), endsAt=f.days(-1)),
                        ],
                    )
                ],
                extra_keys=[
                    {
                        "key": "vl_local_test_owner_ro",
                        "orgId": "org-acme",
                        "permissions": ["reservation.read"],
                    },
                    *s.fleet_keys(),
                ],
            )
        )
    )


def _event(route, res, key, body=None, if_match=None, node="node-a") -> dict[str, Any]:
    ids = {"nodeId": node, "reservationId": res}
    event = api_event(sample(route), route, ids, key, body)
    if if_match is not None:
        event["headers"]["if-match"] = if_match
    return event


def put(functions, body, key=BROKER, res="res-1", **options):
    return invoke(
        functions["set_lending"], _event(endpoints.SET_LENDING, res, key, body, **options)
    )


def delete(functions, key=BROKER, res="res-1", **options):
    return invoke(functions["clear_lending"], _event(endpoints.CLEAR_LENDING, res, key, **options))


def read(functions, key=BROKER):
    return invoke(functions["get_reservation"], get_event("node-a", "res-1", key))


def updates(aws) -> list[dict[str, Any]]:
    return [
        e for e in state.reservation_events(aws, "node-a", "res-1")
        if e["type"] == "reservation.updated"
    ]  # fmt: skip


def test_a_reservation_without_a_policy_shows_lending_null(functions, fleet):
    body = read(functions).body
    assert "lending" in body
    assert body["lending"] is None


def test_a_put_sets_the_whole_policy_with_its_defaults_and_a_new_etag(functions, fleet, aws):
    before = read(functions)
    result = put(functions, {"auto": True, "noticeSeconds": 120})
    assert result.status == 200, result.body_text
    policy = {**DEFAULTS, "noticeSeconds": 120}
    assert result.body["lending"] == policy
    assert result.headers["etag"] == f'"{result.body["etag"]}"' != before.headers["etag"]
    assert read(functions).body["lending"] == policy
    assert read(functions).headers["etag"] == result.headers["etag"]
    stored = state.reservation(aws, "node-a", "res-1")
    assert stored["version"] == 2
    [event] = updates(aws)
    assert event["data"]["changes"] == {"lending": {"from": None, "to": policy}}
    assert event["data"]["actor"]["orgId"] == "org-broker"


def test_a_put_replaces_the_policy_whole(functions, fleet, aws):
    put(functions, {"auto": True, "noticeSeconds": 120, "keepUnlent": 1})
    result = put(functions, {"auto": False})
    assert result.body["lending"] == {**DEFAULTS, "auto": False}
    second = updates(aws)[1]["data"]["changes"]["lending"]
    assert second["from"] == {**DEFAULTS, "noticeSeconds": 120, "keepUnlent": 1}
    assert second["to"] == {**DEFAULTS, "auto": False}


def test_a_put_of_the_stored_policy_writes_and_emits_nothing(functions, fleet, aws):
    first = put(functions, {"auto": True})
    before = state.whole_table(aws)
    again = put(functions, dict(DEFAULTS))  # the same policy, its defaults spelled out
    assert (again.status, again.body_text) == (200, first.body_text)
    assert again.headers["etag"] == first.headers["etag"]
    assert state.whole_table(aws) == before


def test_a_delete_removes_it_and_a_second_delete_changes_nothing(functions, fleet, aws):
    put(functions, {"auto": True, "minRunSeconds": 600})
    tagged = read(functions).headers["etag"]
    result = delete(functions)
    assert (result.status, result.body_text) == (204, "")
    after = read(functions)
    assert after.body["lending"] is None
    assert after.headers["etag"] != tagged
    assert "lending" not in state.reservation(aws, "node-a", "res-1")
    assert updates(aws)[-1]["data"]["changes"]["lending"]["to"] is None
    before = state.whole_table(aws)
    assert delete(functions).status == 204
    assert state.whole_table(aws) == before


@pytest.mark.parametrize("key", [BROKER, OWNER, "Bearer vl_local_test_operator"])
def test_the_ones_who_release_and_reclaim_may_set_it(functions, fleet, key):
    assert put(functions, {"auto": True}, key=key).status == 200
    assert delete(functions, key=key).status == 204


@pytest.mark.parametrize(
    ("key", "node", "res"),
    [
        ("Bearer vl_local_test_lab", "node-a", "res-1"),  # the audience
        ("Bearer vl_local_test_stranger", "node-a", "res-1"),
        ("Bearer vl_local_test_owner_ro", "node-a", "res-1"),  # no reservation.capacity
        (BROKER, "node-x", "res-1"),
        (BROKER, "node-a", "res-x"),
        (BROKER, "node-a", "res 1"),
    ],
)
def test_everyone_else_gets_the_one_404_byte_for_byte(functions, fleet, aws, key, node, res):
    reference = invoke(functions["list_units"], list_units_event("node-x", OWNER))
    before = state.whole_table(aws)
    ids = {"nodeId": node, "reservationId": res}
    for route, body in ((endpoints.SET_LENDING, {"auto": True}), (endpoints.CLEAR_LENDING, None)):
        event = api_event(sample(route), route, ids, key, body)
        result = invoke(functions[route.function], event)
        assert comparable(result) == comparable(reference)
        assert "etag" not in result.headers
    assert state.whole_table(aws) == before


@pytest.mark.parametrize(
    "body",
    [
        {},  # auto is required
        {"auto": "yes"},
        {"auto": True, "idleSeconds": 59},
        {"auto": True, "idleSeconds": 86401},
        {"auto": True, "keepUnlent": 33},
        {"auto": True, "noticeSeconds": -1},
        {"auto": True, "minRunSeconds": 3601},
        {"auto": True, "relendAfterSeconds": 3601},
        {"auto": True, "idleSeconds": 900.5},
        {"auto": True, "lend": True},
        "[]",
        None,
    ],
)
def test_a_bad_body_is_a_400_naming_the_field_and_changes_nothing(functions, fleet, aws, body):
    before = state.whole_table(aws)
    result = put(functions, body)
    assert (result.status, result.body["code"]) == (400, "invalid_request"), result.body_text
    assert result.body["details"]
    assert state.whole_table(aws) == before


def test_an_ended_reservation_is_not_changeable(functions, fleet, aws):
    before = state.whole_table(aws)
    for result in (put(functions, {"auto": True}, res="res-old"), delete(functions, res="res-old")):
        assert (result.status, result.body["code"]) == (409, "reservation_not_changeable")
        assert result.body["details"] == [{"field": "status", "problem": "is expired"}]
    assert state.whole_table(aws) == before


def test_if_match_another_tag_is_412_with_the_current_one(functions, fleet, aws):
    current = read(functions).headers["etag"]
    before = state.whole_table(aws)
    for result in (
        put(functions, {"auto": True}, if_match='"0123456789abcdef0123"'),
        delete(functions, if_match='"0123456789abcdef0123"'),
    ):
        assert (result.status, result.body["code"]) == (412, "precondition_failed")
        assert result.headers["etag"] == current
    assert state.whole_table(aws) == before
    assert put(functions, {"auto": True}, if_match=current).status == 200
    assert delete(functions, if_match="*").status == 204


def test_an_idempotency_key_is_not_looked_at(functions, fleet, aws):
    """Both are idempotent by nature: the header is ignored, nothing is kept."""
    event = _event(endpoints.SET_LENDING, "res-1", BROKER, {"auto": True})
    event["headers"]["idempotency-key"] = "k-1"
    assert invoke(functions["set_lending"], event).status == 200
    event = _event(endpoints.SET_LENDING, "res-1", BROKER, {"auto": False})
    event["headers"]["idempotency-key"] = "k-1"  # another body: no 422, it acts
    assert invoke(functions["set_lending"], event).body["lending"]["auto"] is False


ONE_WRITE = [("dynamodb", "Query"), ("dynamodb", "TransactWriteItems")]


def test_a_policy_change_is_two_requests_and_no_change_one(functions, fleet, sent_requests):
    """One strongly consistent Query of the node's partition, one TransactWriteItems; a PUT
    of the stored policy, or a DELETE of none, the Query alone (key cached, as warm)."""
    read(functions)  # a warm container: the broker's key cached
    for call in (
        lambda: put(functions, {"auto": True}),
        lambda: put(functions, {"auto": False}),
        lambda: delete(functions),
    ):
        sent_requests.clear()
        call()
        assert sent_requests.sent == ONE_WRITE
    for call in (lambda: delete(functions), lambda: put(functions, {"auto": True})):
        call()
        sent_requests.clear()
        call()  # again: nothing to write
        assert sent_requests.sent == [("dynamodb", "Query")]


def test_a_pending_reservation_takes_a_policy_before_its_term(functions, fleet, aws):
    result = put(functions, {"auto": True, "minRunSeconds": 300}, res="res-later")
    assert (result.status, result.body["status"]) == (200, "pending")
    assert result.body["lending"]["minRunSeconds"] == 300
    assert delete(functions, res="res-later").status == 204
