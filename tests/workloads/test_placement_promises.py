"""What a spot workload is promised when it is placed, over the fakes: the smallest over the
reservations governing its units then (a unit whose reservation has no policy, or that no
reservation governs, promises 0), on the workload, its item, its event and its reads; a
policy changed later never lowers it; a reclaim then keeps it; list units shows what a spot
workload placed on a released unit now would get."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest

from reservations.kernel.bodies import RawBody
from reservations.kernel.caller import Caller
from reservations.nodes.list_units import list_units
from reservations.nodes.models.partition import LendingPolicy, Node
from reservations.nodes.rules.promises import promised
from reservations.nodes.table.items import workload_from_item, workload_item
from reservations.nodes.views import read_workload_view
from tests.support.fakes import FakeClock, FakeTable, ports
from tests.support.use_cases import BROKER, NOW, OWNER, QUEUE, reservation, unit, workload
from tests.support.writes import place_workload, reclaim

pytestmark = pytest.mark.disable_socket

SCHEDULER = Caller(
    "key-sched", "org-op", frozenset({"workload.place"}), platform_operator=True, key_hash="hs"
)
A1, A2, A3 = "0000:04:00.0", "0000:05:00.0", "0000:06:00.0"  # res-a, all released
B1, B2 = "0000:07:00.0", "0000:08:00.0"  # res-b, B1 released
C1 = "0000:09:00.0"  # res-c, no policy, released
FREE = "0000:0a:00.0"  # nothing holds it
LATER = "0000:0b:00.0"  # res-later holds it from tomorrow, released

A_POLICY = LendingPolicy(True, notice_seconds=300, min_run_seconds=600)
B_POLICY = LendingPolicy(False, notice_seconds=900, min_run_seconds=120)


@pytest.fixture
def store(clock: FakeClock) -> FakeTable:
    store = FakeTable(clock)
    store.add(
        Node("node-a", "org-acme", queue_url=QUEUE),
        [unit(u) for u in (A1, A2, A3, B1, B2, C1, FREE, LATER)],
        [
            reservation("res-a", reserved=(A1, A2, A3), released=(A1, A2, A3), lending=A_POLICY),
            reservation("res-b", reserved=(B1, B2), released=(B1,), lending=B_POLICY),
            reservation("res-c", reserved=(C1,), released=(C1,)),
            reservation(
                "res-later",
                reserved=(LATER,),
                released=(LATER,),
                starts_at=NOW + timedelta(days=1),
                lending=B_POLICY,
            ),
        ],
        [],
    )
    return store


def place(store, clock, units, workload_id="vm-new", tier="spot", org="org-spot"):
    body = {"id": workload_id, "kind": "vm", "tier": tier, "orgId": org, "unitIds": list(units)}
    outcome = place_workload(
        SCHEDULER, "node-a", RawBody(json.dumps(body)), None, ports(store, clock)
    )
    assert outcome.status == 201, outcome.body
    return json.loads(outcome.body)


def promises_of(answer) -> tuple[int, int]:
    return answer["promisedNoticeSeconds"], answer["promisedMinRunSeconds"]


@pytest.mark.parametrize(
    ("units", "expected"),
    [
        ((A1,), (300, 600)),  # one reservation's policy
        ((A1, A2), (300, 600)),
        ((A1, B1), (300, 120)),  # the smallest of each, from either reservation
        ((A1, C1), (0, 0)),  # a reservation without a policy promises nothing
        ((A1, FREE), (0, 0)),  # a unit no reservation governs promises nothing
        ((LATER,), (0, 0)),  # nor one held only later
        ((FREE,), (0, 0)),
    ],
)
def test_placement_fixes_the_smallest_promise_over_the_governing_reservations(
    store, clock, units, expected
):
    answer = place(store, clock, units)
    assert promises_of(answer) == expected
    placed = store.nodes["node-a"].workloads["vm-new"]
    assert (placed.promised_notice_seconds, placed.promised_min_run_seconds) == expected
    [event] = [e for e in store.events if e.event.type.value == "workload.placed"]
    data = event.event.envelope(True)["data"]
    assert (data["promisedNoticeSeconds"], data["promisedMinRunSeconds"]) == expected


def test_other_tiers_are_promised_nothing(store, clock):
    answer = place(store, clock, (A1,), tier="on-demand", org="org-lab")  # res-a's audience
    assert promises_of(answer) == (0, 0)


def test_a_policy_changed_after_placement_never_lowers_a_promise(store, clock, queue):
    place(store, clock, (A1,))
    reservations = store.nodes["node-a"].reservations
    for lending in (LendingPolicy(True), None):  # lowered, then removed
        reservations["res-a"] = replace(reservations["res-a"], lending=lending)
        placed = store.nodes["node-a"].workloads["vm-new"]
        view = read_workload_view("node-a", placed)
        assert (view.promised_notice_seconds, view.promised_min_run_seconds) == (300, 600)
    # A reclaim now, with no notice and no policy, still keeps both promises.
    clock.now = NOW + timedelta(seconds=60)
    raw = RawBody(json.dumps({"unitIds": [A1]}))
    outcome = reclaim(BROKER, "node-a", "res-a", raw, None, ports(store, clock, queue))
    [entry] = json.loads(outcome.body)["terminations"]
    assert entry["terminateAt"] == "2026-11-29T12:10:00Z"  # placed at NOW + 600 s minimum run
    assert queue.sent(QUEUE)[0].terminate_at == NOW + timedelta(seconds=600)


def test_list_units_shows_the_promises_on_released_units_only(store, clock):
    units = {u.id: u for u in list_units(OWNER, "node-a", store, NOW)}

    def shown(unit_id):
        u = units[unit_id]
        return u.promised_notice_seconds, u.promised_min_run_seconds

    assert shown(A1) == (300, 600)
    assert shown(B1) == (900, 120)
    assert shown(C1) == (0, 0)  # released, without a policy
    assert shown(B2) == (None, None)  # reserved, not released
    assert shown(FREE) == (None, None)
    body = json.loads(units[B2].model_dump_json(by_alias=True, exclude_none=True))
    assert "promisedNoticeSeconds" not in body
    # What list units shows is what a placement there gets.
    for unit_id in (A1, B1, C1):
        assert promised([unit_id], store.load_node("node-a"), NOW) == shown(unit_id)


def test_promises_are_stored_only_when_made_and_an_old_item_reads_as_none():
    spot = replace(
        workload("vm-1", (A1,)), promised_notice_seconds=300, promised_min_run_seconds=600
    )
    item = workload_item("node-a", spot)
    assert (item["promisedNoticeSeconds"], item["promisedMinRunSeconds"]) == (300, 600)
    assert workload_from_item(item) == spot
    old = {k: v for k, v in item.items() if not k.startswith("promised")}
    assert workload_from_item(old) == replace(
        spot, promised_notice_seconds=0, promised_min_run_seconds=0
    )
    assert workload_item("node-a", workload("vm-2", (A1,)))["promisedNoticeSeconds"] is None
