"""The clock against the table (moto): the real ClockFire transaction writes the event,
records the moment fired and moves ``clockAt`` on without touching the version, and fails
when the reservation left the clock place it was read at; the history move carries the
moments left and conditions on that place too; a re-affirm into active after the start
writes the activation at its commit; a PATCH conditions on ``clockAt`` as read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import event_file, reaffirm_event, update_event
from devstack.functions import FakeContext, invoke, load_function
from reservations.kernel.aws.codec import to_attributes
from reservations.kernel.times import format_time
from reservations.lifecycle.table.clock import armed_item
from reservations.nodes.table.items import reservation_from_item
from tests.support import state

pytestmark = pytest.mark.moto

OWNER = "Bearer vl_local_test_writer"
OPERATOR = "Bearer vl_local_test_node_operator"
UNITS = ["0000:04:00.0", "0000:05:00.0"]
NAMES = ("clock", "history_mover", "reaffirm", "update_reservation")
CLOCK_TYPES = ("reservation.activated", "reservation.expiring", "reservation.expired")


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    return {name: load_function(name) for name in NAMES}


@pytest.fixture
def fleet(load_fleet) -> None:
    writer = {
        "key": "vl_local_test_writer",
        "orgId": "org-acme",
        "permissions": ["reservation.read", "reservation.capacity", "reservation.write"],
    }
    operator = {
        "key": "vl_local_test_node_operator",
        "orgId": "org-platform",
        "permissions": ["node.write"],
    }
    units = [f.unit(u) for u in UNITS]
    load_fleet(f.fleet([f.node("node-a", units, [])], [writer, operator]))


def now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def put(aws: Any, res_id: str, status: str, starts: datetime, ends: datetime, **more: Any) -> None:
    """A reservation as a create two days ago would have left it (armed then, 60 min)."""
    armed = now() - timedelta(days=2)
    fields = {
        "id": res_id,
        "nodeId": "node-a",
        "status": status,
        "startsAt": format_time(starts),
        "endsAt": format_time(ends),
        "allowedOrgIds": ["org-lab"],
        "managingOrgIds": [],
        "reservedUnitIds": [UNITS[0]],
        "releasedUnitIds": [],
        "createdAt": format_time(armed),
        "updatedAt": format_time(armed),
        "version": 1,
        "expiryWarningMinutes": 60,
        "clockArmedAt": format_time(armed),
        **more,
    }
    item = armed_item(reservation_from_item(fields))
    aws.put_item(TableName=state.TABLE, Item=to_attributes(item))


def run_clock(functions: dict[str, ModuleType]) -> dict[str, int]:
    result: dict[str, int] = functions["clock"].lambda_handler(
        event_file("clock/scheduled.json"), FakeContext()
    )
    return result


def move(functions: dict[str, ModuleType]) -> dict[str, int]:
    result: dict[str, int] = functions["history_mover"].lambda_handler(
        event_file("history_mover/scheduled.json"), FakeContext()
    )
    return result


def clock_events(aws: Any, res_id: str) -> list[tuple[str, datetime, str]]:
    """Its clock events, by their time (one transaction's events share a feed position)."""
    return sorted(
        (
            (e["type"], state.parse_time(e["time"]), e["data"]["moment"])
            for e in state.reservation_events(aws, "node-a", res_id)
            if e["type"] in CLOCK_TYPES
        ),
        key=lambda event: (event[1], CLOCK_TYPES.index(event[0])),
    )


def test_a_fire_writes_the_event_records_it_and_moves_on_without_the_version(functions, fleet, aws):
    start = now() - timedelta(minutes=2)
    put(aws, "res-p", "pending", start, start + timedelta(days=1))
    before = state.reservation(aws, "node-a", "res-p")
    assert run_clock(functions)["fired"] == 1
    after = state.reservation(aws, "node-a", "res-p")
    assert after["version"] == before["version"]
    assert after["clockFired"] == {"activated": format_time(start)}
    assert after["clockAt"] > before["clockAt"]  # on to the warning, a day minus an hour on
    assert after["clockAt"].startswith(format_time(start + timedelta(hours=23))[:19])
    assert clock_events(aws, "res-p") == [("reservation.activated", start, "startsAt")]
    assert run_clock(functions).get("fired", 0) == 0
    assert len(clock_events(aws, "res-p")) == 1


def test_moments_due_at_once_are_each_written_in_the_same_pass(functions, fleet, aws):
    """Started and within its warning at once (a term shorter than the warning): the pass
    writes the activation, then the warning, conditioned on the place the first left."""
    start = now() - timedelta(minutes=2)
    put(aws, "res-short", "pending", start, start + timedelta(minutes=30))
    assert run_clock(functions)["fired"] == 1
    assert clock_events(aws, "res-short") == [
        ("reservation.activated", start, "startsAt"),
        ("reservation.expiring", start, "endsAt"),
    ]
    after = state.reservation(aws, "node-a", "res-short")
    assert after["clockFired"] == {"activated": format_time(start), "expiring": format_time(start)}
    assert after["clockAt"].startswith(format_time(start + timedelta(minutes=30))[:19])


def test_a_fire_fails_where_the_reservation_left_the_clock_place_read(
    functions, fleet, aws, monkeypatch
):
    start = now() - timedelta(minutes=2)
    put(aws, "res-p", "pending", start, start + timedelta(days=1))
    from reservations.nodes.table.store import NodeTable

    loading = NodeTable.load_reservation

    def read_then_moved(self: NodeTable, node_id: str, res_id: str) -> Any:
        read = loading(self, node_id, res_id)
        aws.update_item(  # another writer moved its clock place; the version stays
            TableName=state.TABLE,
            Key=to_attributes({"PK": "NODE#node-a", "SK": "RES#res-p"}),
            UpdateExpression="SET clockAt = :elsewhere",
            ExpressionAttributeValues=to_attributes({":elsewhere": "2000-01-01T00:00:00#9x"}),
        )
        return read

    monkeypatch.setattr(NodeTable, "load_reservation", read_then_moved)
    counts = run_clock(functions)
    assert (counts.get("fired", 0), counts["left"]) == (0, 1)
    assert clock_events(aws, "res-p") == []
    assert "clockFired" not in state.reservation(aws, "node-a", "res-p")


def test_the_history_move_carries_the_warning_and_the_end_each_at_its_moment(functions, fleet, aws):
    ends = now() - timedelta(minutes=5)
    put(aws, "res-e", "active", ends - timedelta(days=1), ends)
    assert move(functions)["moved"] == 1
    assert clock_events(aws, "res-e") == [
        ("reservation.expiring", ends - timedelta(hours=1), "endsAt"),
        ("reservation.expired", ends, "endsAt"),
    ]
    moved = state.history_reservation(aws, "node-a", "res-e")
    assert moved is not None
    assert "clockAt" not in moved
    assert run_clock(functions).get("fired", 0) == 0
    assert move(functions)["moved"] == 0
    assert len(clock_events(aws, "res-e")) == 2


def test_the_history_move_fails_where_the_clock_fired_since_its_listing(
    functions, fleet, aws, monkeypatch
):
    ends = now() - timedelta(minutes=5)
    put(aws, "res-e", "active", ends - timedelta(days=1), ends)
    from reservations.nodes.table.store import NodeTable

    listing = NodeTable.due_moves

    def listed_then_fired(self: NodeTable, at: datetime) -> Any:
        listed = list(listing(self, at))
        run_clock(functions)  # the clock's pass fires the warning and the end meanwhile
        return iter(listed)

    monkeypatch.setattr(NodeTable, "due_moves", listed_then_fired)
    move(functions)
    monkeypatch.setattr(NodeTable, "due_moves", listing)
    move(functions)
    assert state.history_reservation(aws, "node-a", "res-e") is not None
    assert [t for t, _, _ in clock_events(aws, "res-e")] == [
        "reservation.expiring",
        "reservation.expired",
    ]


def test_a_reaffirm_into_active_after_the_start_writes_the_activation_against_the_table(
    functions, fleet, aws
):
    start = now() - timedelta(minutes=2)
    put(aws, "res-r", "needs-review", start, start + timedelta(days=1))
    answer = invoke(functions["reaffirm"], reaffirm_event("node-a", "res-r", None, OPERATOR))
    assert answer.status == 200, answer.body_text
    [activated] = [e for e in state.reservation_events(aws, "node-a", "res-r")
                   if e["type"] == "reservation.activated"]  # fmt: skip
    assert activated["data"]["moment"] == "startsAt"
    assert state.parse_time(activated["time"]) > start  # the re-affirm's commit
    item = state.reservation(aws, "node-a", "res-r")
    assert (item["status"], item["clockFired"]) == ("active", {"activated": format_time(start)})
    assert item["clockAt"].startswith(format_time(start + timedelta(hours=23))[:19])
    assert run_clock(functions).get("fired", 0) == 0


def test_a_patch_read_before_a_moment_fired_is_retried_and_keeps_its_record(
    functions, fleet, aws, monkeypatch
):
    start = now() - timedelta(minutes=2)
    put(aws, "res-p", "pending", start, start + timedelta(days=1))
    from reservations.nodes.table.store import NodeTable

    loading = NodeTable.load_node
    fired: list[dict[str, int]] = []

    def read_then_fired(self: NodeTable, node_id: str) -> Any:
        read = loading(self, node_id)
        if not fired:
            fired.append(run_clock(functions))
        return read

    monkeypatch.setattr(NodeTable, "load_node", read_then_fired)
    body = {"endsAt": format_time(start + timedelta(days=2))}
    answer = invoke(functions["update_reservation"], update_event("node-a", "res-p", body, OWNER))
    assert answer.status == 200, answer.body_text
    assert fired[0]["fired"] == 1
    item = state.reservation(aws, "node-a", "res-p")
    assert item["clockFired"] == {"activated": format_time(start)}
    monkeypatch.setattr(NodeTable, "load_node", loading)
    assert run_clock(functions).get("fired", 0) == 0
    assert [t for t, _, _ in clock_events(aws, "res-p")] == ["reservation.activated"]
