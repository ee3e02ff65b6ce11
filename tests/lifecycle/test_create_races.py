"""Creates racing each other, against the local emulator (one DynamoDB request at a time).

Each create runs in its own forked process, as in its own Lambda container, and a barrier
after each one's first read makes them all decide from the same snapshot: every one finds
the units free, and only the node item's version lets exactly one commit. The others re-read,
see the winner, and answer 409 units_unavailable.
"""

from __future__ import annotations

from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import create_event
from reservations.kernel.times import parse_time
from tests.support import state
from tests.support.forks import ReadHook, barrier_after_first_read, concurrently

pytestmark = pytest.mark.races

WRITER = "Bearer vl_local_test_writer"
UNITS = ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0"]
RACERS = 6
# What the last run saw, for whoever reads the test output (``-s``).
FIGURES: dict[str, Any] = {}


def _fleet(node_id: str) -> dict[str, Any]:
    keys = [{"key": "vl_local_test_writer", "orgId": "org-acme",
             "permissions": ["reservation.read", "reservation.write"]}]  # fmt: skip
    return f.fleet([f.node(node_id, [f.unit(u) for u in UNITS])], extra_keys=keys)


def _creates(node_id: str, bodies: list[dict[str, Any]], hook: ReadHook) -> list[Any]:
    """The owner's creates on ``node_id``, all at once."""
    return concurrently(
        [("create_reservation", create_event(node_id, body, WRITER)) for body in bodies], hook
    )


def _reservations(db: Any, node_id: str) -> list[dict[str, Any]]:
    """The node's stored reservations (the emulator is shared by every race test)."""
    items = state.whole_table(db)
    return [i for i in items if i["PK"] == f"NODE#{node_id}" and i["SK"].startswith("RES#")]


def _overlapping_pairs(reservations: list[dict[str, Any]]) -> int:
    """Stored live reservations that share a unit over a shared moment: must be none."""
    pairs = 0
    for i, a in enumerate(reservations):
        for b in reservations[i + 1 :]:
            shared = set(a["reservedUnitIds"]) & set(b["reservedUnitIds"])
            a_end, b_end = a.get("endsAt"), b.get("endsAt")
            meet = (b_end is None or parse_time(a["startsAt"]) < parse_time(b_end)) and (
                a_end is None or parse_time(b["startsAt"]) < parse_time(a_end)
            )
            pairs += bool(shared and meet)
    return pairs


def test_overlapping_creates_from_the_same_snapshot_leave_exactly_one_winner(
    emulated, load_emulated_fleet
):
    load_emulated_fleet(_fleet("race-c1"))
    hook = barrier_after_first_read(RACERS)
    # Each racer names 04 plus one other unit: any two overlap on 04.
    bodies = [
        {"unitIds": ["0000:04:00.0", UNITS[1 + i % 2]], "allowedOrgIds": [f"org-{i}"]}
        for i in range(RACERS)
    ]
    results = _creates("race-c1", bodies, hook)
    statuses = sorted(r.status for r in results)
    losers = [r for r in results if r.status != 201]
    db = emulated["dynamodb"]
    stored = _reservations(db, "race-c1")
    FIGURES.update(attempts=RACERS, winners=statuses.count(201), reads=hook.reads.value,
                   violations=_overlapping_pairs(stored))  # fmt: skip
    print(f"\ncreate race: {FIGURES}")
    assert statuses == [201] + [409] * (RACERS - 1)
    assert {r.body["code"] for r in losers} == {"units_unavailable"}
    assert all("held by reservation" in r.body["details"][0]["problem"] for r in losers)
    assert len(stored) == 1
    assert FIGURES["violations"] == 0
    # Every loser read again after losing the write: one read each, plus one more each.
    assert hook.reads.value >= 2 * RACERS - 1
    assert state.item(db, "race-c1", "#NODE")["version"] == 2


def test_creates_of_different_units_from_the_same_snapshot_all_take_effect(
    emulated, load_emulated_fleet
):
    load_emulated_fleet(_fleet("race-c2"))
    hook = barrier_after_first_read(3)
    bodies = [{"unitIds": [unit], "allowedOrgIds": ["org-lab"]} for unit in UNITS]
    results = _creates("race-c2", bodies, hook)
    assert [r.status for r in results] == [201] * 3
    assert hook.reads.value >= 5  # the node version serialized them: two re-read, one twice
    db = emulated["dynamodb"]
    stored = _reservations(db, "race-c2")
    assert sorted(u for r in stored for u in r["reservedUnitIds"]) == UNITS
    assert state.item(db, "race-c2", "#NODE")["version"] == 4
