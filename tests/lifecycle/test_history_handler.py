"""The node's past, kept apart and still readable, in-process over moto: a cancel moves its
reservation to the node's history (``NODEHIST#``), the history mover moves the expired ones,
GET and the list read both with the same visibility, writes on a moved reservation are
refused as ended, and retention ends in the 404."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import (
    cancel_event,
    event_file,
    get_event,
    list_event,
    reclaim_event,
    release_event,
)
from devstack.functions import invoke, load_function
from reservations.kernel.aws.codec import to_attributes
from reservations.kernel.times import parse_time
from reservations.nodes.table.items import (
    reservation_from_item,
    reservation_history_item,
    reservation_item,
)
from tests.support import state
from tests.support.paging import bounded_pages
from tests.support.ports import swap_ports

pytestmark = pytest.mark.moto

WRITE = ["reservation.read", "reservation.capacity", "reservation.write"]
OWNER = "Bearer vl_local_test_writer"
DEMO_OWNER = "Bearer vl_local_only_owner"
LAB = "Bearer vl_local_test_lab"
STRANGER = "Bearer vl_local_test_stranger"
X = "Bearer vl_local_test_x"
UNITS = ["0000:04:00.0", "0000:05:00.0"]
RETENTION = timedelta(days=400)
NAMES = ("cancel", "get_reservation", "list_reservations", "release", "reclaim", "history_mover")


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    return {name: load_function(name) for name in NAMES}


@pytest.fixture
def fleet(load_fleet) -> None:
    """node-a: res-01 ... res-06, each of one unit, live, managed by org-broker; res-01
    names org-lab, the others org-x."""
    reservations = [
        f.reservation(
            f"res-{i:02d}", [UNITS[i % 2]], allowedOrgIds=["org-lab" if i == 1 else "org-x"]
        )
        for i in range(1, 7)
    ]
    writer = {"key": "vl_local_test_writer", "orgId": "org-acme", "permissions": WRITE}
    x = {"key": "vl_local_test_x", "orgId": "org-x", "permissions": ["reservation.read"]}
    units = [f.unit(u) for u in UNITS]
    load_fleet(f.fleet([f.node("node-a", units, reservations)], [writer, x]))


def cancel(functions, res: str, key: str = OWNER) -> Any:
    return invoke(functions["cancel"], cancel_event("node-a", res, None, key))


def get(functions, res: str, key: str = OWNER) -> Any:
    return invoke(functions["get_reservation"], get_event("node-a", res, key))


def listed(functions, key: str = OWNER, **query: str) -> Any:
    return invoke(functions["list_reservations"], list_event("node-a", key, query))


def every_page(functions, key: str = OWNER, **query: str) -> list[str]:
    ids, cursor = [], None
    for _ in bounded_pages():
        page = listed(functions, key, **query, **({"cursor": cursor} if cursor else {}))
        assert page.status == 200, page.body_text
        ids += [item["id"] for item in page.body["items"]]
        if (cursor := page.body.get("nextCursor")) is None:
            break
    return ids


def move_expired(functions) -> dict[str, int]:
    result: dict[str, int] = functions["history_mover"].lambda_handler(
        event_file("history_mover/scheduled.json"), _context()
    )
    return result


def _context() -> Any:
    from devstack.functions import FakeContext

    return FakeContext()


def put_live(aws, res_id: str, ends_at: datetime, version: int = 1) -> None:
    """A reservation in node-a's partition as a create would have left it, ending then."""
    start = ends_at - timedelta(days=1)
    item = reservation_item(
        reservation_from_item(
            {
                "id": res_id,
                "nodeId": "node-a",
                "status": "active",
                "startsAt": _iso(start),
                "endsAt": _iso(ends_at),
                "allowedOrgIds": ["org-lab"],
                "managingOrgIds": [],
                "reservedUnitIds": [UNITS[0]],
                "releasedUnitIds": [],
                "createdAt": _iso(start),
                "updatedAt": _iso(start),
                "version": version,
            }
        )
    )
    aws.put_item(TableName=state.TABLE, Item=to_attributes(item))


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


# --- cancel moves its reservation -----------------------------------------------------------


def test_a_cancel_moves_its_reservation_to_the_nodes_history(functions, fleet, aws):
    answer = cancel(functions, "res-03")
    assert (answer.status, answer.body["status"]) == (200, "cancelled")
    assert "RES#res-03" not in {item["SK"] for item in state.partition(aws, "node-a")}
    moved = state.history_reservation(aws, "node-a", "res-03")
    assert moved is not None
    assert (moved["status"], moved["version"], moved["listPK"]) == ("cancelled", 2, "NODE#node-a")
    assert "liveEnds" not in moved  # out of the mover's index
    ended = parse_time(moved["updatedAt"])
    assert moved["expiresAtEpoch"] == int((ended + RETENTION).timestamp())
    assert get(functions, "res-03").body == answer.body  # GET reads the history, same answer


def test_a_moved_reservation_is_refused_as_ended_not_unknown(functions, fleet, aws):
    assert cancel(functions, "res-01").status == 200
    again = cancel(functions, "res-01")
    assert (again.status, again.body["code"]) == (409, "reservation_not_active")
    body = {"unitIds": [UNITS[1]]}
    for route, event in (("release", release_event), ("reclaim", reclaim_event)):
        refused = invoke(functions[route], event("node-a", "res-01", body, OWNER))
        assert (refused.status, refused.body["code"]) == (409, "reservation_not_active"), route
    assert cancel(functions, "res-99").status == 404  # unknown stays the 404
    assert cancel(functions, "res-01", key=STRANGER).status == 404  # and so does not allowed


def test_history_keeps_the_visibility_rules(functions, fleet, aws):
    assert cancel(functions, "res-01").status == 200
    assert get(functions, "res-01", key=LAB).status == 200  # org-lab is named by it
    assert get(functions, "res-02", key=LAB).status == 404
    assert every_page(functions, key=LAB) == ["res-01"]
    assert every_page(functions, key=LAB, status="cancelled") == ["res-01"]
    assert listed(functions, key=STRANGER).status == 404


# --- the list over present and history ------------------------------------------------------


def test_the_list_shows_present_and_history_in_one_order_and_live_statuses_the_present(
    functions, fleet, aws
):
    for res in ("res-02", "res-05"):
        assert cancel(functions, res).status == 200
    assert every_page(functions) == [f"res-{i:02d}" for i in range(1, 7)]
    assert every_page(functions, status="cancelled") == ["res-02", "res-05"]
    assert every_page(functions, status="active") == ["res-01", "res-03", "res-04", "res-06"]
    assert every_page(functions, limit="1", status="expired,cancelled") == ["res-02", "res-05"]


def test_a_reservation_moving_between_pages_is_neither_lost_nor_shown_twice(functions, fleet, aws):
    first = listed(functions, limit="2")
    assert [item["id"] for item in first.body["items"]] == ["res-01", "res-02"]
    for res in ("res-02", "res-04"):  # one already shown, one still ahead
        assert cancel(functions, res).status == 200
    ids, cursor = [], first.body["nextCursor"]
    statuses = {}
    for _ in bounded_pages():
        if not cursor:
            break
        page = listed(functions, limit="2", cursor=cursor)
        ids += [item["id"] for item in page.body["items"]]
        statuses |= {item["id"]: item["status"] for item in page.body["items"]}
        cursor = page.body.get("nextCursor")
    assert ids == ["res-03", "res-04", "res-05", "res-06"]
    assert statuses["res-04"] == "cancelled"


# --- the history mover ----------------------------------------------------------------------


def test_the_mover_moves_an_expired_reservation_once_and_readers_never_wait_for_it(
    functions, fleet, aws
):
    ended = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    put_live(aws, "res-old", ended)
    assert get(functions, "res-old").body["status"] == "expired"  # before the move
    assert every_page(functions, status="expired") == ["res-old"]
    assert move_expired(functions) == {"moved": 1, "left": 0, "deferred": 0}
    assert "RES#res-old" not in {item["SK"] for item in state.partition(aws, "node-a")}
    moved = state.history_reservation(aws, "node-a", "res-old")
    assert moved is not None
    assert moved["expiresAtEpoch"] == int((ended + RETENTION).timestamp())
    assert get(functions, "res-old").body["status"] == "expired"  # after it
    assert every_page(functions, status="expired") == ["res-old"]
    assert move_expired(functions) == {"moved": 0, "left": 0, "deferred": 0}  # nothing again
    assert len(state.partition(aws, "node-a")) == 1 + 1 + 2 + 6  # node, access, units, live


def test_the_mover_leaves_a_reservation_not_past_its_end(functions, fleet, aws):
    put_live(aws, "res-later", datetime.now(UTC) + timedelta(minutes=5))
    assert move_expired(functions)["moved"] == 0
    assert state.history_reservation(aws, "node-a", "res-later") is None


def test_a_move_conditions_on_the_version_it_listed(functions, fleet, aws, monkeypatch):
    """A write between the index's listing and the move: the move changes nothing, and the
    next pass moves the reservation as it is then."""
    put_live(aws, "res-old", datetime.now(UTC) - timedelta(hours=1))
    from reservations.nodes.table.store import NodeTable

    listing = NodeTable.due_moves

    def listed_then_written(self: NodeTable, now: datetime) -> Any:
        listed = list(listing(self, now))
        put_live(aws, "res-old", datetime.now(UTC) - timedelta(hours=1), version=2)
        return iter(listed)

    monkeypatch.setattr(NodeTable, "due_moves", listed_then_written)
    assert move_expired(functions) == {"moved": 0, "left": 1, "deferred": 0}
    assert state.history_reservation(aws, "node-a", "res-old") is None
    monkeypatch.setattr(NodeTable, "due_moves", listing)
    assert move_expired(functions)["moved"] == 1
    assert state.history_reservation(aws, "node-a", "res-old")["version"] == 2  # type: ignore[index]


# --- retention -----------------------------------------------------------------------------


def test_past_its_retention_a_reservation_is_gone_before_the_ttl_deletes_it(functions, fleet, aws):
    kept = json.loads(json.dumps(state.reservation(aws, "node-a", "res-01"), default=str))
    reservation = reservation_from_item({**kept, "status": "cancelled"})
    just_past = datetime.now(UTC) - timedelta(seconds=1)
    item = reservation_history_item(reservation, just_past)
    aws.delete_item(
        TableName=state.TABLE, Key=to_attributes({"PK": "NODE#node-a", "SK": "RES#res-01"})
    )
    aws.put_item(TableName=state.TABLE, Item=to_attributes(item))
    assert get(functions, "res-01").status == 404
    assert "res-01" not in every_page(functions)
    assert cancel(functions, "res-01").status == 404


def at(monkeypatch, functions, name: str, moment: datetime) -> ModuleType:
    """The function, its clock at ``moment``."""
    swap_ports(monkeypatch, functions[name], clock=lambda: moment)
    return functions[name]


def listed_at(monkeypatch, functions, moment: datetime, key: str) -> Any:
    lister = at(monkeypatch, functions, "list_reservations", moment)
    return invoke(lister, list_event("node-a", key, {}))


def test_an_org_whose_reservations_all_left_retention_gets_the_404_and_others_still_list(
    functions, fleet, aws, monkeypatch
):
    """res-01 alone names org-lab; cancelled now, it is readable 400 days, then the list is
    the 404 for org-lab (not an empty page), while org-x, which reservations ending in 300
    days name, and the owner still list the node."""
    now = datetime.now(UTC)
    assert cancel(functions, "res-01").status == 200
    before = listed_at(monkeypatch, functions, now + RETENTION - timedelta(days=1), LAB)
    assert (before.status, [r["id"] for r in before.body["items"]]) == (200, ["res-01"])
    after = now + RETENTION + timedelta(minutes=1)
    assert listed_at(monkeypatch, functions, after, LAB).status == 404
    others = listed_at(monkeypatch, functions, after, X)
    assert others.status == 200
    assert [r["id"] for r in others.body["items"]] == [f"res-{i:02d}" for i in range(2, 7)]
    assert listed_at(monkeypatch, functions, after, OWNER).status == 200


def test_an_expired_reservation_names_its_orgs_until_its_retention_ends_with_no_write(
    functions, fleet, aws, monkeypatch
):
    """No call on the node and no move: org-x's reservations end in 300 days; 400 days
    after that the list is its 404."""
    ends_at = parse_time(state.reservation(aws, "node-a", "res-02")["endsAt"])
    last = listed_at(monkeypatch, functions, ends_at + RETENTION - timedelta(minutes=1), X)
    assert (last.status, len(last.body["items"])) == (200, 5)
    assert listed_at(monkeypatch, functions, ends_at + RETENTION, X).status == 404


def test_the_mover_takes_out_of_the_list_access_the_orgs_named_no_more(
    functions, fleet, aws, monkeypatch
):
    """The list access item holds the orgs of what is still readable, not of the node's
    whole past: the mover's pass on a node takes out those past their moment."""
    now = datetime.now(UTC)
    assert cancel(functions, "res-01").status == 200
    later = now + RETENTION + timedelta(days=1)  # res-02 ... res-06 ended in between
    swap_ports(monkeypatch, functions["history_mover"], clock=lambda: later)
    assert move_expired(functions)["moved"] == 5
    access = state.item(aws, "node-a", "~ACCESS")
    assert access is not None
    named = sorted(name for name in access if name.startswith("namedUntil:"))
    assert named == ["namedUntil:org-broker", "namedUntil:org-x"]  # org-lab's is out
    assert listed_at(monkeypatch, functions, later, X).status == 200


def test_the_demo_fleets_node_with_a_long_past_has_it_in_its_history(load_fleet, aws, functions):
    load_fleet(f.demo_fleet(with_past=True))
    assert len(state.history(aws, "node-d9")) == 3000
    present = state.partition(aws, "node-d9")
    assert [item["SK"] for item in present if item["SK"].startswith("RES#")] == []
    page = invoke(
        functions["list_reservations"],
        list_event("node-d9", DEMO_OWNER, {"limit": "100", "status": "expired,cancelled"}),
    )
    assert page.status == 200
    assert {item["status"] for item in page.body["items"]} == {"expired", "cancelled"}
    assert page.body["nextCursor"]
