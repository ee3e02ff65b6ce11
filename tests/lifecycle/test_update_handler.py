"""PATCH /v1/nodes/{nodeId}/reservations/{id}, in-process over moto: the answer, the item as
stored, the one 404, the shipped events, and the reduced event an org the change removes
reads from every feed it has."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import event_file, list_units_event, update_event
from devstack.fleet_documents import ROOT
from devstack.functions import invoke, load_function
from reservations.kernel.event_log import SETTLE_WINDOW
from reservations.kernel.times import format_time
from reservations.nodes.table.keys import LIVE, LIVE_ENDS
from tests.support import event_scenario as s
from tests.support import state
from tests.support.bodies import comparable, unidentified
from tests.support.event_table import BusWatch, StreamRelay
from tests.support.ports import swap_ports

pytestmark = pytest.mark.moto

WRITE = ["reservation.read", "reservation.capacity", "reservation.write", "events.read"]
OWNER = "Bearer vl_local_test_writer"
OPERATOR = "Bearer vl_local_test_op_writer"
U4, U5, U6 = "0000:04:00.0", "0000:05:00.0", "0000:06:00.0"


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    names = ("update_reservation", "node_events", "org_events", "event_relay", "list_units")
    return {name: load_function(name) for name in names}


@pytest.fixture
def fleet(load_fleet):
    """node-a: res-1 holds 04 and 05 (04 released, a spot VM on it) for org-lab, managed by
    org-broker; res-2 holds 06 after res-1's end."""
    ends = datetime.now(UTC).replace(microsecond=0) + timedelta(days=300)
    load_fleet(
        s.with_feed_permissions(
            f.fleet(
                [
                    f.node(
                        "node-a",
                        [f.unit(u) for u in (U4, U5, U6)],
                        [
                            f.reservation("res-1", [U4, U5], releasedUnitIds=[U4], reason="lab"),
                            f.reservation(
                                "res-2",
                                [U6],
                                status="pending",
                                startsAt=format_time(ends + timedelta(days=10)),
                                endsAt=format_time(ends + timedelta(days=20)),
                            ),
                        ],
                        [f.workload("vm-spot", [U4])],
                    )
                ],
                extra_keys=[
                    {"key": "vl_local_test_writer", "orgId": "org-acme", "permissions": WRITE},
                    {
                        "key": "vl_local_test_op_writer",
                        "orgId": "org-platform",
                        "permissions": WRITE,
                    },
                    {
                        "key": "vl_local_test_broker_writer",
                        "orgId": "org-broker",
                        "permissions": WRITE,
                    },
                    *s.fleet_keys(),
                ],
            )
        )
    )


def patch(functions, body, key=OWNER, node="node-a", res="res-1", idempotency_key=None):
    event = update_event(node, res, body, key, idempotency_key)
    return invoke(functions["update_reservation"], event)


def later(days: int) -> str:
    return format_time(datetime.now(UTC).replace(microsecond=0) + timedelta(days=days))


@pytest.mark.parametrize("key", [OWNER, OPERATOR])
def test_a_patch_answers_the_reservation_and_writes_it_whole(functions, fleet, aws, key):
    ends = later(310)
    result = patch(functions, {"endsAt": ends, "removeUnitIds": [U4]}, key=key)
    assert result.status == 200, result.body_text
    body = result.body
    assert (body["endsAt"], body["reservedUnitIds"], body["releasedUnitIds"]) == (ends, [U5], [])
    stored = state.reservation(aws, "node-a", "res-1")
    assert (stored["endsAt"], stored["reservedUnitIds"], stored["version"]) == (ends, [U5], 2)
    assert (stored[LIVE_ENDS], stored["reason"]) == (LIVE, "lab")  # in the mover's index still
    # Nothing terminated: the spot VM on the removed unit keeps running.
    assert state.workload(aws, "node-a", "vm-spot")["state"] == "running"
    [event] = state.reservation_events(aws, "node-a", "res-1")
    assert event["type"] == "reservation.updated"
    assert event["data"]["changes"]["reservedUnitIds"] == {"from": [U4, U5], "to": [U5]}


def test_open_ended_leaves_the_movers_index(functions, fleet, aws):
    assert patch(functions, {"endsAt": None}).status == 200
    stored = state.reservation(aws, "node-a", "res-1")
    assert "endsAt" not in stored
    assert LIVE_ENDS not in stored


def test_extending_over_the_next_reservation_of_an_added_unit_is_409(functions, fleet, aws):
    before = state.whole_table(aws)
    result = patch(functions, {"endsAt": later(315), "addUnitIds": [U6]})
    assert (result.status, result.body["code"]) == (409, "units_unavailable")
    assert result.body["details"][0]["field"] == "addUnitIds[0]"
    assert state.whole_table(aws) == before


def test_a_patch_that_changes_nothing_writes_nothing(functions, fleet, aws):
    before = state.whole_table(aws)
    result = patch(functions, {"reason": "lab"})
    assert (result.status, result.body["reason"]) == (200, "lab")
    assert state.whole_table(aws) == before


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ('{"startsAt": null}', 400, "invalid_request"),
        ("{}", 400, "invalid_request"),
        ({"startsAt": later(1)}, 409, "reservation_not_changeable"),
        ({"removeUnitIds": [U4, U5]}, 409, "reservation_not_changeable"),
        ({"removeUnitIds": [U6]}, 422, "units_not_in_reservation"),
        ({"addUnitIds": ["0000:0f:00.0"]}, 422, "units_not_reservable"),
    ],
)
def test_each_refusal_changes_nothing(functions, fleet, aws, body, status, code):
    before = state.whole_table(aws)
    result = patch(functions, body)
    assert (result.status, result.body["code"]) == (status, code)
    assert state.whole_table(aws) == before


@pytest.mark.parametrize(
    ("key", "node", "res"),
    [
        ("Bearer vl_local_test_broker_writer", "node-a", "res-1"),  # a manager: never changes
        ("Bearer vl_local_test_lab", "node-a", "res-1"),  # the audience
        ("Bearer vl_local_test_stranger", "node-a", "res-1"),
        ("Bearer vl_local_test_owner", "node-a", "res-1"),  # the owner, no reservation.write
        (OWNER, "node-x", "res-1"),
        (OWNER, "node-a", "res-x"),
        (OWNER, "node-a", "res 1"),
    ],
)
def test_everyone_else_gets_the_one_404_byte_for_byte(functions, fleet, aws, key, node, res):
    reference = invoke(functions["list_units"], list_units_event("node-x", OWNER))
    before = state.whole_table(aws)
    for body in ({"endsAt": later(310)}, '{"endsat": 1}'):
        if res == "res-x" and isinstance(body, str):
            continue  # the owner's node, an unknown reservation: the later 404, after the body
        result = patch(functions, body, key=key, node=node, res=res)
        assert comparable(result) == comparable(reference)
        assert "etag" not in result.headers
    assert state.whole_table(aws) == before


@pytest.mark.parametrize("key", [None, "Basic abc", "Bearer vl_nobody"])
def test_401(functions, fleet, key):
    result = patch(functions, {"endsAt": later(310)}, key=key)
    assert (result.status, result.headers["www-authenticate"]) == (401, "Bearer")


def test_a_key_replays_the_first_answer(functions, fleet, aws):
    ends = later(310)  # once: the same body, whichever second the repeat is sent in
    first = patch(functions, {"endsAt": ends}, idempotency_key="patch-1")
    again = patch(functions, {"endsAt": ends}, idempotency_key="patch-1")
    assert (again.status, again.body_text) == (first.status, first.body_text)
    assert len(state.reservation_events(aws, "node-a", "res-1")) == 1
    reused = patch(functions, {"endsAt": later(311)}, idempotency_key="patch-1")
    assert (reused.status, reused.body["code"]) == (422, "idempotency_key_reused")


def test_a_keyed_patch_that_changes_nothing_keeps_its_answer_for_the_repeat(functions, fleet, aws):
    """Nothing to write, but a 200 reached the decision: the key keeps it, so its repeat
    replays it even after the reservation changed (and a reused key is still refused)."""
    first = patch(functions, {"reason": "lab"}, idempotency_key="noop-1")  # the stored reason
    assert first.status == 200, first.body_text
    assert state.reservation(aws, "node-a", "res-1")["version"] == 1  # nothing written
    assert state.reservation_events(aws, "node-a", "res-1") == []
    moved = patch(functions, {"reason": "moved on"})
    assert moved.status == 200
    again = patch(functions, {"reason": "lab"}, idempotency_key="noop-1")
    assert (again.status, again.body_text) == (first.status, first.body_text)
    assert again.headers["idempotent-replayed"] == "true"
    assert state.reservation(aws, "node-a", "res-1")["reason"] == "moved on"
    reused = patch(functions, {"reason": "other"}, idempotency_key="noop-1")
    assert (reused.status, reused.body["code"]) == (422, "idempotency_key_reused")


@pytest.mark.parametrize(
    ("event_name", "status", "code"),
    [
        ("update_reservation/extend.json", 200, None),
        ("update_reservation/extend_overlapping.json", 409, "units_unavailable"),
        ("update_reservation/not_changeable.json", 409, "reservation_not_changeable"),
        ("update_reservation/typo_field.json", 400, "invalid_request"),
        ("update_reservation/no_permission.json", 404, "not_found"),
    ],
)
def test_the_sam_local_events_against_the_demo_fleet(
    functions, load_fleet, event_name, status, code
):
    load_fleet(f.demo_fleet())
    result = invoke(functions["update_reservation"], event_file(event_name))
    assert result.status == status, result.body_text
    if code is not None:
        assert unidentified(result.body)["code"] == code


# --- the reduced event, on every feed ---------------------------------------------------------


@pytest.fixture
def settled(functions, monkeypatch) -> None:
    """The feeds read a settle window later: every item written so far is readable."""
    read_later = lambda: datetime.now(UTC) + SETTLE_WINDOW  # noqa: E731
    for name in ("node_events", "org_events"):
        swap_ports(monkeypatch, functions[name], clock=read_later)


def _updated(result: Any) -> list[dict[str, Any]]:
    assert result.status == 200, result.body_text
    return [e for e in result.body["items"] if e["type"] == "reservation.updated"]


def test_an_org_the_change_removes_reads_a_reduced_event_on_every_feed(
    functions, fleet, aws, settled
):
    bus = BusWatch()
    body = {"managingOrgIds": [], "allowedOrgIds": ["org-lab", "org-newlab"]}
    assert patch(functions, body).status == 200
    StreamRelay(aws, functions["event_relay"]).run()
    broker = s.bearer("manager")  # org-broker: the change removed it from the managers
    node_feed = s.node_feed_event("node-a", broker, {"types": "reservation.updated"})
    org_feed = s.org_feed_event(broker, {"types": "reservation.updated"})
    reduced = {"changes": {"managingOrgIds": {"removed": True}}, "actor": {"orgId": "org-acme"}}
    for result in (
        invoke(functions["node_events"], node_feed),
        invoke(functions["org_events"], org_feed),
    ):
        [event] = _updated(result)
        assert event["data"] == reduced
        assert "org-newlab" not in json.dumps(event)
        assert "org-lab" not in json.dumps(event)
    # The audience (still named) and the owner read it whole; the owner with the key id.
    lab = s.bearer("audience")
    [seen] = _updated(invoke(functions["org_events"], s.org_feed_event(lab, None)))
    assert seen["data"]["changes"]["allowedOrgIds"] == {
        "from": ["org-lab"],
        "to": ["org-lab", "org-newlab"],
    }
    owner = invoke(functions["node_events"], s.node_feed_event("node-a", OWNER, None))
    [whole] = _updated(owner)
    assert whole["data"]["changes"]["managingOrgIds"] == {"from": ["org-broker"], "to": []}
    assert "keyId" in whole["data"]["actor"]
    # The bus carries the whole event.
    [published] = [e for e in bus.events() if e["type"] == "reservation.updated"]
    assert published["data"]["changes"] == whole["data"]["changes"]
    # After it, the broker is no longer in the reservation's audience.
    assert patch(functions, {"endsAt": later(310)}).status == 200
    StreamRelay(aws, functions["event_relay"]).run()
    assert len(_updated(invoke(functions["org_events"], org_feed))) == 1


# --- the docs session ---------------------------------------------------------------------------

SESSION_KEYS = {"$OWNER": "Bearer vl_local_only_owner", "$BROKER": "Bearer vl_local_only_broker"}
_PATCH = re.compile(
    r"curl -s -X PATCH -H \"(?P<key>\$\w+)\" \$API/reservations/(?P<res>[\w-]+)\s*\\?\s*"
    r"--json '(?P<body>[^']*)'\s*\n# (?P<status>\d{3})"
)


def session_calls() -> list[tuple[str, str, Any, int]]:
    """The PATCH calls of docs/sessions.md's "Changing a reservation", in order: key, the
    reservation, the body, and the status its comment says."""
    text = (ROOT / "docs" / "sessions.md").read_text()
    section = text.split("## Changing a reservation", 1)[1].split("\n## ", 1)[0]
    return [
        (SESSION_KEYS[m["key"]], m["res"], json.loads(m["body"]), int(m["status"]))
        for m in _PATCH.finditer(section)
    ]


def test_the_docs_session_answers_as_it_says_on_the_demo_fleet(functions, load_fleet, aws):
    load_fleet(f.demo_fleet())
    calls = session_calls()
    assert len(calls) == 7
    for key, res, body, status in calls:
        result = invoke(functions["update_reservation"], update_event("node-a1", res, body, key))
        assert result.status == status, (body, result.body_text)
    stored = state.reservation(aws, "node-a1", "res-a-active")
    assert stored["endsAt"] == "2032-11-01T00:00:00Z"
    # Two changes of res-a-active, one of res-a-pending: the no-op and the refusals wrote none.
    assert len(state.reservation_events(aws, "node-a1", "res-a-active")) == 2
    assert len(state.reservation_events(aws, "node-a1", "res-a-pending")) == 1


def test_if_match_over_the_handler_412_with_the_current_etag_then_the_change(functions, fleet, aws):
    first = patch(functions, {"reason": "lab"})  # changes nothing: its ETag is the current one
    etag = first.headers["etag"]
    assert etag == f'"{first.body["etag"]}"'
    before = state.whole_table(aws)
    event = update_event("node-a", "res-1", {"reason": "renewed"}, OWNER)
    event["headers"]["if-match"] = '"stale"'
    refused = invoke(functions["update_reservation"], event)
    assert (refused.status, refused.body["code"], refused.headers["etag"]) == (
        412,
        "precondition_failed",
        etag,
    )
    assert state.whole_table(aws) == before
    event["headers"]["if-match"] = etag
    changed = invoke(functions["update_reservation"], event)
    assert (changed.status, changed.body["reason"]) == (200, "renewed")
    assert changed.headers["etag"] not in (etag, None)
