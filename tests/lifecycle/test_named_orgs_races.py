"""Who may list a node's reservations, kept exact under races: the list access item names
an org until the latest end of the readable reservations naming it. Two cancels of
reservations naming the same org, and a create naming it racing a cancel, each from the
same snapshot (a barrier after each one's first read), in their own processes against the
local emulator: whichever order they commit in, the org's moment is what a serial order
would leave."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import cancel_event, create_event
from reservations.kernel.times import parse_time
from tests.support import state
from tests.support.forks import barrier_after_first_read, concurrently

pytestmark = pytest.mark.races

OWNER = "Bearer vl_local_test_writer"
WRITE = ["reservation.read", "reservation.capacity", "reservation.write"]
UNITS = ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0"]
RETENTION = timedelta(days=400)
ROUNDS = 4


def _fleet(node_id: str, second: str) -> dict[str, Any]:
    """res-1 and res-2, live for 300 days more: res-1 names org-lab, res-2 ``second``."""
    reservations = [
        f.reservation(r, [u], allowedOrgIds=[org], managingOrgIds=[])
        for r, u, org in (("res-1", UNITS[0], "org-lab"), ("res-2", UNITS[1], second))
    ]
    writer = {"key": "vl_local_test_writer", "orgId": "org-acme", "permissions": WRITE}
    return f.fleet([f.node(node_id, [f.unit(u) for u in UNITS], reservations)], [writer])


def _named_until(db: Any, node_id: str, org: str) -> int | None:
    access = state.item(db, node_id, "~ACCESS")
    value = (access or {}).get(f"namedUntil:{org}")
    return None if value is None else int(value)


def _race(
    name: str,
    second: str,
    load: Callable[[dict[str, Any]], None],
    calls: Callable[[str], list[tuple[str, dict[str, Any]]]],
    judge: Callable[[str, list[Any]], list[str]],
) -> tuple[list[str], int]:
    problems, rereads = [], 0
    for number in range(ROUNDS):
        node_id = f"{name}-{number}"
        load(_fleet(node_id, second))
        hook = barrier_after_first_read(2)
        problems += [f"{node_id}: {p}" for p in judge(node_id, concurrently(calls(node_id), hook))]
        rereads += hook.reads.value - 2
    return problems, rereads


def test_two_cancels_naming_one_org_leave_it_named_until_the_later_cancels_retention(
    emulated, load_emulated_fleet
):
    """Each read the other reservation live (named 700 days on); the one that commits second
    finds the org brought forward since its read, reads again, and leaves it named until
    its own cancel's retention ends, not the other's 700 days."""
    db = emulated["dynamodb"]

    def calls(node_id: str) -> list[tuple[str, dict[str, Any]]]:
        return [("cancel", cancel_event(node_id, r, None, OWNER)) for r in ("res-1", "res-2")]

    def judge(node_id: str, results: list[Any]) -> list[str]:
        if [r.status for r in results] != [200, 200]:
            return [f"answers {[r.status for r in results]}"]
        ends = [state.history_reservation(db, node_id, r) for r in ("res-1", "res-2")]
        latest = max(int(e["expiresAtEpoch"]) for e in ends if e is not None)
        named = _named_until(db, node_id, "org-lab")
        return [] if named == latest else [f"org-lab named until {named}, not {latest}"]

    problems, rereads = _race("can-can", "org-lab", load_emulated_fleet, calls, judge)
    assert problems == []
    assert rereads >= ROUNDS  # every round, one of the two read again


def test_a_create_naming_an_org_racing_a_cancel_keeps_it_named_for_the_new_reservation(
    emulated, load_emulated_fleet
):
    """res-1 alone names org-lab: its cancel brings org-lab forward to the cancel's
    retention, as it read the node; the create names org-lab for a reservation ending in 900
    days. Whichever commits first, org-lab stays named until the new one's end plus the
    retention (a cancel after the create reads again: the create moved the node's
    version)."""
    db = emulated["dynamodb"]
    ends = datetime.now(UTC).replace(microsecond=0) + timedelta(days=900)
    body = {"unitIds": [UNITS[2]], "allowedOrgIds": ["org-lab"], "endsAt": f.iso(ends)}

    def calls(node_id: str) -> list[tuple[str, dict[str, Any]]]:
        return [
            ("cancel", cancel_event(node_id, "res-1", None, OWNER)),
            ("create_reservation", create_event(node_id, body, OWNER)),
        ]

    def judge(node_id: str, results: list[Any]) -> list[str]:
        if [r.status for r in results] != [200, 201]:
            return [f"answers {[r.status for r in results]}"]
        created = parse_time(results[1].body["endsAt"])
        expected = int((created + RETENTION).timestamp())
        named = _named_until(db, node_id, "org-lab")
        return [] if named == expected else [f"org-lab named until {named}, not {expected}"]

    problems, _ = _race("can-cre", "org-x", load_emulated_fleet, calls, judge)
    assert problems == []
