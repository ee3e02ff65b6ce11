"""PATCH racing another PATCH, a reclaim, a release and a placement, against the local
emulator (one DynamoDB request at a time).

Each call runs in its own forked process, as in its own Lambda container, and a barrier after
each one's first read makes them decide from the same snapshot. Whatever the order the
emulator takes their writes in, the outcome is one the calls could have had one after the
other: nothing lost, no unit held twice, no release outside the reservation.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import place_event, reclaim_event, release_event, update_event
from reservations.kernel.times import format_time
from tests.support import state
from tests.support.forks import barrier_after_first_read, concurrently

pytestmark = pytest.mark.races

OWNER = "Bearer vl_local_test_writer"
BROKER = "Bearer vl_local_test_broker"
SCHEDULER = "Bearer vl_local_test_scheduler"
U4, U5, U6 = "0000:04:00.0", "0000:05:00.0", "0000:06:00.0"
KEYS = [
    {"key": "vl_local_test_writer", "orgId": "org-acme",
     "permissions": ["reservation.read", "reservation.write"]},
    {"key": "vl_local_test_scheduler", "orgId": "org-platform",
     "permissions": ["workload.place"]},
]  # fmt: skip


def _later(days: int) -> str:
    return format_time(datetime.now(UTC).replace(microsecond=0) + timedelta(days=days))


def _fleet(node_id: str, *reservations: dict[str, Any], workloads=()) -> dict[str, Any]:
    units = [f.unit(u) for u in (U4, U5, U6)]
    return f.fleet([f.node(node_id, units, list(reservations), list(workloads))], KEYS)


def _patch(node_id: str, res: str, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "update_reservation", update_event(node_id, res, body, OWNER)


def test_two_patches_adding_the_same_unit_to_overlapping_reservations_leave_one_holder(
    emulated, load_emulated_fleet
):
    load_emulated_fleet(
        _fleet("race-u1", f.reservation("res-1", [U4]), f.reservation("res-2", [U5]))
    )
    results = concurrently(
        [
            _patch("race-u1", "res-1", {"addUnitIds": [U6]}),
            _patch("race-u1", "res-2", {"addUnitIds": [U6]}),
        ],
        barrier_after_first_read(2),
    )
    assert sorted(r.status for r in results) == [200, 409]
    [loser] = [r for r in results if r.status == 409]
    assert loser.body["code"] == "units_unavailable"
    db = emulated["dynamodb"]
    holders = [
        res
        for res in ("res-1", "res-2")
        if U6 in state.reservation(db, "race-u1", res)["reservedUnitIds"]
    ]
    assert len(holders) == 1


def test_two_patches_of_one_reservation_both_take_effect_one_after_the_other(
    emulated, load_emulated_fleet
):
    load_emulated_fleet(_fleet("race-u2", f.reservation("res-1", [U4])))
    ends = _later(320)
    results = concurrently(
        [
            _patch("race-u2", "res-1", {"addUnitIds": [U5]}),
            _patch("race-u2", "res-1", {"endsAt": ends, "contractRef": "C-9"}),
        ],
        barrier_after_first_read(2),
    )
    assert [r.status for r in results] == [200, 200]
    stored = state.reservation(emulated["dynamodb"], "race-u2", "res-1")
    assert (stored["reservedUnitIds"], stored["endsAt"], stored["contractRef"]) == (
        [U4, U5],
        ends,
        "C-9",
    )
    assert stored["version"] == 3
    assert len(state.reservation_events(emulated["dynamodb"], "race-u2", "res-1")) == 2


def test_a_patch_removing_a_unit_and_a_reclaim_of_it_end_consistent(emulated, load_emulated_fleet):
    load_emulated_fleet(
        _fleet(
            "race-u3",
            f.reservation("res-1", [U4, U5], releasedUnitIds=[U4]),
            workloads=[f.workload("vm-spot", [U4])],
        )
    )
    patched, reclaimed = concurrently(
        [
            _patch("race-u3", "res-1", {"removeUnitIds": [U4]}),
            ("reclaim", reclaim_event("race-u3", "res-1", {"unitIds": [U4]}, BROKER)),
        ],
        barrier_after_first_read(2),
    )
    db = emulated["dynamodb"]
    assert patched.status == 200
    stored = state.reservation(db, "race-u3", "res-1")
    assert (stored["reservedUnitIds"], stored["releasedUnitIds"]) == ([U5], [])
    vm = state.workload(db, "race-u3", "vm-spot")
    if reclaimed.status == 200:  # it came first: the VM is being terminated, the unit leaves
        assert vm["state"] == "terminating"
    else:  # the PATCH came first: the unit was no longer the reservation's, nothing is done
        assert (reclaimed.status, reclaimed.body["code"]) == (422, "units_not_in_reservation")
        assert vm["state"] == "running"


def test_a_patch_removing_a_unit_and_a_release_of_it_never_leave_it_released(
    emulated, load_emulated_fleet
):
    load_emulated_fleet(_fleet("race-u4", f.reservation("res-1", [U4, U5])))
    patched, released = concurrently(
        [
            _patch("race-u4", "res-1", {"removeUnitIds": [U5]}),
            ("release", release_event("race-u4", "res-1", {"unitIds": [U5]}, BROKER)),
        ],
        barrier_after_first_read(2),
    )
    assert patched.status == 200
    assert released.status in (200, 422)
    if released.status == 422:
        assert released.body["code"] == "units_not_in_reservation"
    stored = state.reservation(emulated["dynamodb"], "race-u4", "res-1")
    assert (stored["reservedUnitIds"], stored["releasedUnitIds"]) == ([U4], [])


def test_a_patch_adding_a_unit_and_a_spot_placement_on_it_leave_one_of_them(
    emulated, load_emulated_fleet
):
    load_emulated_fleet(_fleet("race-u5", f.reservation("res-1", [U4])))
    spot = {"id": "vm-new", "kind": "vm", "tier": "spot", "orgId": "org-spotbuyer",
            "unitIds": [U6]}  # fmt: skip
    patched, placed = concurrently(
        [
            _patch("race-u5", "res-1", {"addUnitIds": [U6]}),
            ("place_workload", place_event("race-u5", spot, SCHEDULER)),
        ],
        barrier_after_first_read(2),
    )
    db = emulated["dynamodb"]
    held = U6 in state.reservation(db, "race-u5", "res-1")["reservedUnitIds"]
    claimed = state.unit(db, "race-u5", U6).get("claimedBy")
    # Exactly one of them: the reservation holds 06 (unclaimed, unreleased), or the spot VM
    # runs on it and the PATCH was refused for the claim.
    assert sorted([patched.status, placed.status]) in ([200, 409], [201, 409])
    if held:
        assert (patched.status, claimed, placed.body["code"]) == (200, None, "units_unavailable")
    else:
        assert (placed.status, claimed) == (201, "vm:vm-new")
        assert (patched.status, patched.body["code"]) == (409, "units_unavailable")
