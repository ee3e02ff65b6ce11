"""Release and cancel racing reclaim, against the local emulator (one DynamoDB request at a
time, as DynamoDB's per-item atomicity). Each call runs in its own forked process, as in its
own Lambda container; a barrier after each one's first read makes both decide from the same
snapshot, so one of the two writes must lose its condition, read again and decide again.

Each test runs several rounds on fresh nodes and prints attempts, winners and violations.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import cancel_event, reclaim_event, release_event
from tests.support import state
from tests.support.forks import barrier_after_first_read, concurrently

pytestmark = pytest.mark.races

BROKER = "Bearer vl_local_test_broker"
OWNER = "Bearer vl_local_test_writer"
WRITE = ["reservation.read", "reservation.capacity", "reservation.write"]
UNITS = ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0"]
ROUNDS = 10


def _fleet(node_id: str) -> dict[str, Any]:
    """res-1 reserves 04-06 with 04 released, where the spot VM vm-a runs."""
    return f.fleet(
        [
            f.node(
                node_id,
                [f.unit(u) for u in UNITS],
                [f.reservation("res-1", UNITS, releasedUnitIds=[UNITS[0]])],
                [f.workload("vm-a", [UNITS[0]])],
            )
        ],
        extra_keys=[{"key": "vl_local_test_writer", "orgId": "org-acme", "permissions": WRITE}],
    )


def _rounds(
    name: str,
    load: Callable[[dict[str, Any]], None],
    calls: Callable[[str], list[tuple[str, dict[str, Any]]]],
    judge: Callable[[str, list[Any]], str | None],
) -> Counter[str]:
    """ROUNDS races on fresh nodes; ``judge`` names the winner, or None for a violation."""
    tally: Counter[str] = Counter()
    for number in range(ROUNDS):
        node_id = f"{name}-{number}"
        load(_fleet(node_id))
        hook = barrier_after_first_read(2)
        winner = judge(node_id, concurrently(calls(node_id), hook))
        tally["attempts"] += 1
        tally[f"winner: {winner}" if winner else "violations"] += 1
        tally["re-reads"] += hook.reads.value - 2
    print(f"\n{name}: {dict(tally)}")
    return tally


def test_a_release_and_a_reclaim_of_the_same_units_never_lose_either_write(
    emulated, load_emulated_fleet
):
    db = emulated["dynamodb"]
    release_body = {"unitIds": [UNITS[1], UNITS[2]]}
    reclaim_body = {"unitIds": [UNITS[0], UNITS[1]]}
    serial = {  # the final releases of the two serial orders
        (UNITS[2],): "release first",  # {04} + {05, 06} - {04, 05}
        (UNITS[1], UNITS[2]): "reclaim first",  # {04} - {04, 05} + {05, 06}
    }

    def calls(node_id: str) -> list[tuple[str, dict[str, Any]]]:
        return [
            ("release", release_event(node_id, "res-1", release_body, BROKER)),
            ("reclaim", reclaim_event(node_id, "res-1", reclaim_body, BROKER)),
        ]

    def judge(node_id: str, results: list[Any]) -> str | None:
        final = tuple(state.reservation(db, node_id, "res-1")["releasedUnitIds"])
        terminating = state.workload(db, node_id, "vm-a")["state"] == "terminating"
        events = len(state.reservation_events(db, node_id, "res-1"))
        fine = [r.status for r in results] == [200, 200] and terminating and events == 2
        return serial.get(final) if fine else None

    tally = _rounds("rel-rec", load_emulated_fleet, calls, judge)
    assert tally["violations"] == 0
    assert tally["re-reads"] >= ROUNDS  # every round, one of the two lost and read again


def test_a_reclaim_racing_a_cancel_commits_before_it_or_is_409_never_after(
    emulated, load_emulated_fleet
):
    db = emulated["dynamodb"]

    def calls(node_id: str) -> list[tuple[str, dict[str, Any]]]:
        return [
            ("cancel", cancel_event(node_id, "res-1", None, OWNER)),
            ("reclaim", reclaim_event(node_id, "res-1", {"unitIds": [UNITS[0]]}, BROKER)),
        ]

    def judge(node_id: str, results: list[Any]) -> str | None:
        cancelled, reclaimed = results
        if cancelled.status != 200:
            return None
        events = [e["type"] for e in state.reservation_events(db, node_id, "res-1")]
        vm = state.workload(db, node_id, "vm-a")["state"]
        if reclaimed.status == 200:
            # Serialized before the cancel: the cancel saw the reclaim's releases.
            written = sorted(events) == ["reservation.cancelled", "reservation.reclaimed"]
            before_cancel = written and vm == "terminating"
            return "reclaim, then cancel" if before_cancel else None
        refused = (reclaimed.status, reclaimed.body.get("code")) == (
            409,
            "reservation_not_active",
        )
        untouched = "reservation.reclaimed" not in events and vm == "running"
        return "cancel; reclaim 409" if refused and untouched else None

    tally = _rounds("can-rec", load_emulated_fleet, calls, judge)
    assert tally["violations"] == 0
    assert tally["re-reads"] >= ROUNDS
