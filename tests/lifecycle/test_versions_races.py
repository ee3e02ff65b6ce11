"""Two writers holding the same version race with If-Match, against the local emulator: each
in its own forked process, a barrier after each one's first read so both decide from the
same snapshot and the same tag. Exactly one acts; the other loses its condition, reads
again, finds another version and answers 412 with the winner's tag, having done nothing."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import cancel_event, release_event
from reservations.lifecycle.views import version_tag
from reservations.nodes import ReservationStatus
from tests.support import state
from tests.support.forks import barrier_after_first_read, concurrently

pytestmark = pytest.mark.races

BROKER = "Bearer vl_local_test_broker"
OWNER = "Bearer vl_local_test_writer"
WRITE = ["reservation.read", "reservation.capacity", "reservation.write"]
UNITS = ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0"]
ROUNDS = 8
# res-1 as the fleet loads it: version 1, active.
LOADED = f'"{version_tag(1, ReservationStatus.ACTIVE)}"'


def _fleet(node_id: str) -> dict[str, Any]:
    return f.fleet(
        [f.node(node_id, [f.unit(u) for u in UNITS], [f.reservation("res-1", UNITS)])],
        extra_keys=[{"key": "vl_local_test_writer", "orgId": "org-acme", "permissions": WRITE}],
    )


def _if_match(event: dict[str, Any]) -> dict[str, Any]:
    event["headers"]["if-match"] = LOADED
    return event


@pytest.mark.parametrize("second", ["release", "cancel"])
def test_two_writers_with_the_same_if_match_one_acts_the_other_is_412(
    emulated, load_emulated_fleet, second
):
    db = emulated["dynamodb"]
    tally: Counter[str] = Counter()
    for number in range(ROUNDS):
        node_id = f"ifm-{second}-{number}"
        load_emulated_fleet(_fleet(node_id))
        assert int(state.reservation(db, node_id, "res-1")["version"]) == 1
        other = (
            release_event(node_id, "res-1", {"unitIds": [UNITS[1]]}, BROKER)
            if second == "release"
            else cancel_event(node_id, "res-1", None, OWNER)
        )
        calls = [
            (
                "release",
                _if_match(release_event(node_id, "res-1", {"unitIds": [UNITS[0]]}, BROKER)),
            ),
            (second, _if_match(other)),
        ]
        hook = barrier_after_first_read(2)
        results = concurrently(calls, hook)
        statuses = sorted(r.status for r in results)
        tally["re-reads"] += hook.reads.value - 2
        if statuses != [200, 412]:
            tally["violations"] += 1
            continue
        won = next(r for r in results if r.status == 200)
        lost = next(r for r in results if r.status == 412)
        stored = state.reservation(db, node_id, "res-1") or {}
        events = state.reservation_events(db, node_id, "res-1")
        fine = (
            lost.body["code"] == "precondition_failed"
            and lost.headers["etag"] == won.headers["etag"] == f'"{won.body["etag"]}"'
            and len(events) == 1  # the loser wrote nothing
            and won.headers["etag"] != LOADED
        )
        if second == "release" and fine:
            fine = int(stored["version"]) == 2 and len(stored["releasedUnitIds"]) == 1
        tally["winners" if fine else "violations"] += 1
    print(f"\nif-match {second}: {dict(tally)}")
    assert tally["violations"] == 0
    assert tally["winners"] == ROUNDS
    assert tally["re-reads"] >= ROUNDS  # the loser read again every round
