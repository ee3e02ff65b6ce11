"""A placement's take-back racing a manager's reclaim and a spot placement on the same unit,
against the local emulator (one DynamoDB request at a time). Each call runs in its own
forked process; a barrier after each one's first node read makes both decide from the same
snapshot, so one write must lose its condition and decide again: never both succeed on what
they read before the other."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import place_event, reclaim_event
from tests.support import state
from tests.support.forks import barrier_after_first_read, concurrently

pytestmark = pytest.mark.races

PLACER = {"key": "vl_local_test_placer", "orgId": "org-platform", "permissions": ["workload.place"]}
SCHEDULER = "Bearer vl_local_test_placer"
BROKER = "Bearer vl_local_test_broker"
LENT = "0000:04:00.0"
ROUNDS = 6
TAKE_BACK = {"id": "vm-lab", "kind": "vm", "tier": "reserved", "orgId": "org-lab",
             "reservationId": "res-1", "unitIds": [LENT]}  # fmt: skip


def _lent(load_emulated_fleet: Any, node_id: str, spot: bool) -> None:
    """res-1 of ``node_id``: one unit, lent; with ``spot``, a spot VM runs on it."""
    workloads = [f.workload("vm-spot", [LENT])] if spot else []
    reservation = f.reservation("res-1", [LENT], releasedUnitIds=[LENT])
    node = f.node(node_id, [f.unit(LENT)], [reservation], workloads)
    load_emulated_fleet(f.fleet([node], [PLACER]))


def _terminations(db: Any, node_id: str) -> set[str]:
    """The termination ids ever requested of vm-spot."""
    requested = state.events(db, node_id, "workloads/vm-spot", "workload.termination_requested")
    return {e["data"]["terminationId"] for e in requested}


def test_a_take_back_and_a_managers_reclaim_of_the_same_unit_terminate_the_spot_vm_once(
    emulated, load_emulated_fleet
):
    db, tally = emulated["dynamodb"], Counter[str]()
    for number in range(ROUNDS):
        node_id = f"take-reclaim-{number}"
        _lent(load_emulated_fleet, node_id, spot=True)
        hook = barrier_after_first_read(2)
        placement = ("place_workload", place_event(node_id, TAKE_BACK, SCHEDULER))
        reclaim = ("reclaim", reclaim_event(node_id, "res-1", {"unitIds": [LENT]}, BROKER))
        placed, reclaimed = concurrently([placement, reclaim], hook)
        spot = state.workload(db, node_id, "vm-spot")
        unit = state.unit(db, node_id, LENT)
        waiting = state.workload(db, node_id, "vm-lab")
        fine = (
            (placed.status, reclaimed.status) == (202, 200)
            and _terminations(db, node_id) == {spot["terminationId"]}
            and [w["terminationId"] for w in waiting["waitingFor"]] == [spot["terminationId"]]
            and (unit["claimedBy"], unit["heldFor"]) == ("vm:vm-spot", "vm:vm-lab")
            and state.reservation(db, node_id, "res-1")["releasedUnitIds"] == []
        )
        tally["attempts"] += 1
        tally["one termination" if fine else "violations"] += 1
        tally["re-reads"] += hook.reads.value - 2
    print(f"\ntake-back-reclaim: {dict(tally)}")
    assert tally["violations"] == 0
    assert tally["re-reads"] >= ROUNDS  # each round, one of them decided again


def test_a_take_back_and_a_spot_placement_on_the_same_free_unit_never_both_claim_it(
    emulated, load_emulated_fleet
):
    db, tally = emulated["dynamodb"], Counter[str]()
    spot = {"id": "vm-spot", "kind": "vm", "tier": "spot", "orgId": "org-spotbuyer",
            "unitIds": [LENT]}  # fmt: skip
    for number in range(ROUNDS):
        node_id = f"take-spot-{number}"
        _lent(load_emulated_fleet, node_id, spot=False)
        hook = barrier_after_first_read(2)
        placed, spotted = concurrently(
            [
                ("place_workload", place_event(node_id, TAKE_BACK, SCHEDULER)),
                ("place_workload", place_event(node_id, spot, SCHEDULER)),
            ],
            hook,
        )
        unit = state.unit(db, node_id, LENT)
        if spotted.status == 201:  # the spot VM first: the take-back read it and waits on it
            outcome = "spot first, then held"
            fine = (
                placed.status == 202
                and state.workload(db, node_id, "vm-spot")["state"] == "terminating"
                and (unit["claimedBy"], unit["heldFor"]) == ("vm:vm-spot", "vm:vm-lab")
            )
        else:  # the take-back first: the spot placement read it and was refused
            outcome = "taken back first"
            fine = (
                (placed.status, spotted.status) == (201, 409)
                and unit["claimedBy"] == "vm:vm-lab"
                and "heldFor" not in unit
            )
        tally["attempts"] += 1
        tally[outcome if fine else "violations"] += 1
        tally["re-reads"] += hook.reads.value - 2
    print(f"\ntake-back-spot: {dict(tally)}")
    assert tally["violations"] == 0


def test_two_take_backs_of_the_same_unit_terminate_once_and_one_waits(
    emulated, load_emulated_fleet
):
    db, tally = emulated["dynamodb"], Counter[str]()
    for number in range(ROUNDS):
        node_id = f"take-take-{number}"
        _lent(load_emulated_fleet, node_id, spot=True)
        hook = barrier_after_first_read(2)
        second = {**TAKE_BACK, "id": "vm-lab-2"}
        first, other = concurrently(
            [
                ("place_workload", place_event(node_id, TAKE_BACK, SCHEDULER)),
                ("place_workload", place_event(node_id, second, SCHEDULER)),
            ],
            hook,
        )
        unit = state.unit(db, node_id, LENT)
        statuses = sorted([first.status, other.status])
        winner = "vm:vm-lab" if first.status == 202 else "vm:vm-lab-2"
        refused = other if first.status == 202 else first
        fine = (
            statuses == [202, 409]
            and refused.body["code"] == "units_unavailable"
            and len(_terminations(db, node_id)) == 1
            and (unit["claimedBy"], unit["heldFor"]) == ("vm:vm-spot", winner)
        )
        tally["attempts"] += 1
        tally["one waits" if fine else "violations"] += 1
        tally["re-reads"] += hook.reads.value - 2
    print(f"\ntake-back-take-back: {dict(tally)}")
    assert tally["violations"] == 0
    assert tally["re-reads"] >= ROUNDS  # each round, one of them decided again
