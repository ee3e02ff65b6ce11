"""The lending pass against the table (moto), run by the clock's function: a policy's PUT
puts the reservation in the lending index and a DELETE takes it out; due idle units are lent
once, by ``{"system": "lending"}``, in one transaction with their event, the version bumped;
a reclaim of lent units records their wait and puts the reservation before the next pass."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import api_event, event_file, reaffirm_event, sample, update_event
from devstack.functions import FakeContext, invoke, load_function
from reservations import endpoints
from reservations.capacity import capacity_ports, run_lending
from reservations.capacity.lending import LendingOutcome
from reservations.kernel.aws.codec import to_attributes
from reservations.kernel.times import format_event_time, format_time
from reservations.lifecycle.table.clock import armed_item
from reservations.nodes.table.items import reservation_from_item
from reservations.nodes.table.keys import LEND_SHARDS
from tests.support import state

pytestmark = pytest.mark.moto

OWNER = "Bearer vl_local_test_writer"
OPERATOR = "Bearer vl_local_test_node_operator"
UNITS = ["0000:04:00.0", "0000:05:00.0"]
NAMES = ("clock", "set_lending", "clear_lending", "reclaim", "update_reservation", "reaffirm")
U6 = "0000:06:00.0"
POLICY = {
    "auto": True,
    "idleSeconds": 60,
    "keepUnlent": 0,
    "noticeSeconds": 0,
    "minRunSeconds": 0,
    "relendAfterSeconds": 120,
}


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
    units = [f.unit(u) for u in [*UNITS, U6]]
    load_fleet(f.fleet([f.node("node-a", units, [])], [writer, operator]))


def now() -> datetime:
    return datetime.now(UTC)


def put_lending(aws: Any, idle_since: datetime, lend_at: datetime) -> None:
    """res-1, active for a day, both units, auto lending on since ``idle_since``."""
    created = now() - timedelta(days=1)
    fields = {
        "id": "res-1",
        "nodeId": "node-a",
        "status": "active",
        "startsAt": format_time(created),
        "endsAt": format_time(created + timedelta(days=30)),
        "allowedOrgIds": ["org-lab"],
        "managingOrgIds": [],
        "reservedUnitIds": UNITS,
        "releasedUnitIds": [],
        "createdAt": format_time(created),
        "updatedAt": format_time(created),
        "version": 3,
        "lending": POLICY,
        "lendingSince": format_event_time(idle_since),
        "lendAt": format_event_time(lend_at),
    }
    item = armed_item(reservation_from_item(fields))
    aws.put_item(TableName=state.TABLE, Item=to_attributes(item))


def run_clock(functions: dict[str, ModuleType]) -> dict[str, int]:
    result: dict[str, int] = functions["clock"].lambda_handler(
        event_file("clock/scheduled.json"), FakeContext()
    )
    return result


def _call(functions, name: str, body: Any = None) -> Any:
    route = getattr(endpoints, name.upper())
    ids = {"nodeId": "node-a", "reservationId": "res-1"}
    return invoke(functions[name], api_event(sample(route), route, ids, OWNER, body))


def released_events(aws: Any) -> list[dict[str, Any]]:
    return state.events(aws, "node-a", "reservations/res-1", "reservation.released")


def test_due_idle_units_are_lent_once_by_the_lending_system(functions, fleet, aws):
    put_lending(aws, now() - timedelta(minutes=2), now() - timedelta(minutes=1))
    assert run_clock(functions)["lending.lent"] == 1
    item = state.reservation(aws, "node-a", "res-1")
    assert sorted(item["releasedUnitIds"]) == UNITS
    assert item["version"] == 4
    assert "lendAt" not in item
    assert "lendShard" not in item
    assert set(item["lendingUnits"]) == set(UNITS)
    (event,) = released_events(aws)
    assert event["data"]["actor"] == {"system": "lending"}
    assert event["data"]["unitIds"] == UNITS
    again = run_clock(functions)
    assert again["lending.lent"] == again["lending.moved"] == 0
    assert len(released_events(aws)) == 1


def test_a_reservation_not_due_yet_only_moves_on_in_the_index(functions, fleet, aws):
    since = now() - timedelta(seconds=20)
    put_lending(aws, since, since)
    assert run_clock(functions)["lending.moved"] == 1
    item = state.reservation(aws, "node-a", "res-1")
    assert item["version"] == 3  # its object did not change
    assert item["lendAt"] == format_event_time(since + timedelta(seconds=60))
    assert item["releasedUnitIds"] == []
    assert released_events(aws) == []


def test_a_policy_puts_the_reservation_in_the_lending_index_and_its_removal_takes_it_out(
    functions, fleet, aws
):
    put_lending(aws, now(), now())
    aws.update_item(
        TableName=state.TABLE,
        Key=to_attributes({"PK": "NODE#node-a", "SK": "RES#res-1"}),
        UpdateExpression="REMOVE lending, lendAt, lendShard, lendingSince",
    )
    before = now()
    assert _call(functions, "set_lending", POLICY).status == 200
    item = state.reservation(aws, "node-a", "res-1")
    assert item["lendShard"].startswith("lend#")
    assert format_event_time(before) <= item["lendAt"] <= format_event_time(now())
    assert item["lendingSince"] == item["lendAt"]  # auto turned on: idle from now
    assert _call(functions, "clear_lending").status == 204
    item = state.reservation(aws, "node-a", "res-1")
    assert not {"lendAt", "lendShard", "lending"} & set(item)


def test_a_reclaim_of_lent_units_records_their_wait_and_looks_again(functions, fleet, aws):
    put_lending(aws, now() - timedelta(minutes=2), now() - timedelta(minutes=1))
    run_clock(functions)
    assert _call(functions, "reclaim", {"unitIds": [UNITS[0]]}).status == 200
    item = state.reservation(aws, "node-a", "res-1")
    assert item["releasedUnitIds"] == [UNITS[1]]
    record = item["lendingUnits"][UNITS[0]]
    taken = state.parse_time(record["relendAt"]) - timedelta(seconds=120)
    assert abs((taken - now()).total_seconds()) < 30
    assert record["takeBacks"] == 1
    assert "lentAt" in record
    assert item["lendAt"] <= format_event_time(now())  # the next pass looks at it
    assert run_clock(functions)["lending.moved"] == 1  # its wait is not over
    assert len(released_events(aws)) == 1


def test_a_patch_adding_a_unit_records_its_joining_and_looks_again(functions, fleet, aws):
    put_lending(aws, now() - timedelta(minutes=2), now() + timedelta(minutes=5))
    before = now()
    answer = invoke(
        functions["update_reservation"],
        update_event("node-a", "res-1", {"addUnitIds": [U6]}, OWNER),
    )
    assert answer.status == 200
    item = state.reservation(aws, "node-a", "res-1")
    joined = state.parse_time(item["lendingUnits"][U6]["joinedAt"])
    assert before - timedelta(seconds=1) <= joined <= now()
    assert item["lendAt"] <= format_event_time(now())  # earlier than the 5 minutes it had
    assert set(item["lendingUnits"]) == {U6}  # the others joined with the reservation


def test_a_reaffirm_starts_every_units_idle_time_afresh(functions, fleet, aws):
    put_lending(aws, now() - timedelta(minutes=2), now() + timedelta(minutes=5))
    state.set_reservation_status(aws, "node-a", "res-1", "needs-review")
    before = now()
    answer = invoke(functions["reaffirm"], reaffirm_event("node-a", "res-1", {}, OPERATOR))
    assert answer.status == 200
    item = state.reservation(aws, "node-a", "res-1")
    assert before - timedelta(seconds=1) <= state.parse_time(item["lendingSince"]) <= now()
    assert item["lendAt"] <= format_event_time(now())
    assert run_clock(functions)["lending.moved"] == 1  # idle afresh: not due for a minute
    assert released_events(aws) == []


def test_a_pass_that_lends_is_one_query_per_index_partition_a_query_and_a_transaction(
    fleet, aws, sent_requests
):
    put_lending(aws, now() - timedelta(minutes=2), now() - timedelta(minutes=1))
    sent_requests.clear()
    counts = run_lending(capacity_ports(), time_left=lambda: 60.0)
    assert counts[LendingOutcome.LENT] == 1
    queries = [("dynamodb", "Query")] * LEND_SHARDS
    assert sorted(sent_requests.sent) == sorted(
        [*queries, ("dynamodb", "Query"), ("dynamodb", "TransactWriteItems")]
    )
    sent_requests.clear()
    run_lending(capacity_ports(), time_left=lambda: 60.0)  # nothing due: the index alone
    assert sent_requests.sent == queries
