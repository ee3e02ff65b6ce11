"""The clock racing itself and a PATCH, against the local emulator: each call in its own
process, a barrier after each one's first read so that all decide from one snapshot.

Two passes that read the same due moment write its event once (the loser's transaction
fails on the clock place it read, and nothing is written twice); a PATCH that read the
reservation before a pass fired its moment keeps the fired record (it conditions on
``clockAt`` as read and decides again), so no pass writes the moment a second time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import event_file, update_event
from reservations.kernel.times import format_time
from tests.support import state
from tests.support.forks import barrier_after_first_read, concurrently

pytestmark = pytest.mark.races

OWNER = "Bearer vl_local_test_writer"
U4 = "0000:04:00.0"
KEYS = [
    {"key": "vl_local_test_writer", "orgId": "org-acme",
     "permissions": ["reservation.read", "reservation.write"]},
]  # fmt: skip
CLOCK = ("clock", event_file("clock/scheduled.json"))


def _pending(node_id: str) -> tuple[dict[str, Any], datetime]:
    """A fleet whose node holds res-1, pending, its start a minute past (due)."""
    now = datetime.now(UTC).replace(microsecond=0)
    start = now - timedelta(minutes=1)
    reservation = f.reservation(
        "res-1",
        [U4],
        status="pending",
        startsAt=format_time(start),
        endsAt=format_time(now + timedelta(days=1)),
        createdAt=format_time(now - timedelta(days=1)),
    )
    return f.fleet([f.node(node_id, [f.unit(U4)], [reservation])], KEYS), start


def _activations(db: Any, node_id: str) -> list[str]:
    return [
        e["time"]
        for e in state.reservation_events(db, node_id, "res-1")
        if e["type"] == "reservation.activated"
    ]


def test_two_passes_reading_one_due_moment_write_it_once(emulated, load_emulated_fleet):
    fleet, start = _pending("race-clock-1")
    load_emulated_fleet(fleet)
    counts = concurrently([CLOCK, CLOCK], barrier_after_first_read(2))
    assert sorted(c.get("fired", 0) for c in counts) == [0, 1]
    assert sorted(c.get("left", 0) for c in counts) == [0, 1]  # the loser read it too
    db = emulated["dynamodb"]
    assert [state.parse_time(t) for t in _activations(db, "race-clock-1")] == [start]
    item = state.reservation(db, "race-clock-1", "res-1")
    assert (item["version"], item["clockFired"]) == (1, {"activated": format_time(start)})


def test_a_patch_racing_the_pass_keeps_the_moment_fired_once(emulated, load_emulated_fleet):
    fleet, start = _pending("race-clock-2")
    load_emulated_fleet(fleet)
    ends = format_time(start + timedelta(days=2))
    patch = ("update_reservation", update_event("race-clock-2", "res-1", {"endsAt": ends}, OWNER))
    patched, _pass = concurrently([patch, CLOCK], barrier_after_first_read(2))
    assert patched.status == 200, patched.body_text
    [after] = concurrently([CLOCK])  # whichever committed first, the next pass settles it
    db = emulated["dynamodb"]
    assert [state.parse_time(t) for t in _activations(db, "race-clock-2")] == [start]
    item = state.reservation(db, "race-clock-2", "res-1")
    assert (item["endsAt"], item["clockFired"]) == (ends, {"activated": format_time(start)})
    assert after.get("fired", 0) + _pass.get("fired", 0) == 1
