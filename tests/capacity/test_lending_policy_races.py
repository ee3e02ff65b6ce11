"""A lending policy's change racing another change of the same reservation, against the
local emulator (one DynamoDB request at a time). Each call runs in its own forked process;
a barrier after each one's first read makes both decide from the same snapshot, so one
write must lose its condition, read again and decide again: neither change is lost."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import api_event, release_event, sample
from reservations import endpoints
from tests.support import state
from tests.support.forks import barrier_after_first_read, concurrently

pytestmark = pytest.mark.races

BROKER = "Bearer vl_local_test_broker"
OWNER = "Bearer vl_local_test_owner"
UNITS = ["0000:04:00.0", "0000:05:00.0"]
ROUNDS = 8


def _fleet(node_id: str) -> dict[str, Any]:
    return f.fleet([f.node(node_id, [f.unit(u) for u in UNITS], [f.reservation("res-1", UNITS)])])


def _put(node_id: str, body: dict[str, Any], key: str) -> tuple[str, dict[str, Any]]:
    ids = {"nodeId": node_id, "reservationId": "res-1"}
    return ("set_lending", api_event(sample(endpoints.SET_LENDING), endpoints.SET_LENDING, ids,
                                     key, body))  # fmt: skip


def _updates(db: Any, node_id: str) -> list[dict[str, Any]]:
    events = state.reservation_events(db, node_id, "res-1")
    return [e for e in events if e["type"] == "reservation.updated"]


def test_two_policies_at_once_both_commit_one_after_the_other(emulated, load_emulated_fleet):
    db, tally = emulated["dynamodb"], Counter[str]()
    for number in range(ROUNDS):
        node_id = f"lend-lend-{number}"
        load_emulated_fleet(_fleet(node_id))
        hook = barrier_after_first_read(2)
        results = concurrently(
            [_put(node_id, {"auto": True}, BROKER), _put(node_id, {"auto": False}, OWNER)], hook
        )
        stored = state.reservation(db, node_id, "res-1")
        changes = [e["data"]["changes"]["lending"] for e in _updates(db, node_id)]
        # Serial in some order: the second's "from" is the first's "to", and it is what stays.
        fine = (
            [r.status for r in results] == [200, 200]
            and stored["version"] == 3
            and len(changes) == 2
            and changes[0]["from"] is None
            and changes[1]["from"] == changes[0]["to"]
            and stored["lending"]["auto"] is changes[1]["to"]["auto"]
        )
        tally["attempts"] += 1
        tally["serial" if fine else "violations"] += 1
        tally["re-reads"] += hook.reads.value - 2
    print(f"\nlend-lend: {dict(tally)}")
    assert tally["violations"] == 0
    assert tally["re-reads"] >= ROUNDS  # each round, one of them read again


def test_a_policy_and_a_release_at_once_keep_both(emulated, load_emulated_fleet):
    db, tally = emulated["dynamodb"], Counter[str]()
    for number in range(ROUNDS):
        node_id = f"lend-rel-{number}"
        load_emulated_fleet(_fleet(node_id))
        hook = barrier_after_first_read(2)
        results = concurrently(
            [
                _put(node_id, {"auto": True, "noticeSeconds": 60}, BROKER),
                ("release", release_event(node_id, "res-1", {"unitIds": [UNITS[0]]}, BROKER)),
            ],
            hook,
        )
        stored = state.reservation(db, node_id, "res-1")
        fine = (
            [r.status for r in results] == [200, 200]
            and stored["releasedUnitIds"] == [UNITS[0]]
            and stored["lending"]["noticeSeconds"] == 60
            and stored["version"] == 3
            and len(_updates(db, node_id)) == 1
        )
        tally["attempts"] += 1
        tally["both kept" if fine else "violations"] += 1
        tally["re-reads"] += hook.reads.value - 2
    print(f"\nlend-rel: {dict(tally)}")
    assert tally["violations"] == 0
