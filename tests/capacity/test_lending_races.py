"""The lending pass racing itself and a placement, against the local emulator (one DynamoDB
request at a time). Each call runs in its own forked process; a barrier after each one's
first node read makes both decide from the same snapshot, so one write must lose its
condition: no unit is lent twice, and none is lent under a workload that claimed it first."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import event_file, place_event
from reservations.kernel.aws.codec import to_attributes
from reservations.kernel.times import format_event_time
from tests.support import state
from tests.support.forks import barrier_after_first_read, concurrently

pytestmark = pytest.mark.races

PLACER = {"key": "vl_local_test_placer", "orgId": "org-platform", "permissions": ["workload.place"]}
UNITS = ["0000:04:00.0", "0000:05:00.0"]
ROUNDS = 8
CLOCK = ("clock", event_file("clock/scheduled.json"))
POLICY = {"auto": True, "idleSeconds": 60, "keepUnlent": 0, "noticeSeconds": 0,
          "minRunSeconds": 0, "relendAfterSeconds": 300}  # fmt: skip


def _due(db: Any, load_emulated_fleet: Any, node_id: str) -> None:
    """res-1 of ``node_id``: both units, for org-lab, lending on, made and both idle two
    minutes ago."""
    load_emulated_fleet(
        f.fleet(
            [f.node(node_id, [f.unit(u) for u in UNITS], [f.reservation("res-1", UNITS)])],
            [PLACER],
        )
    )
    since = datetime.now(UTC) - timedelta(minutes=2)
    db.update_item(
        TableName=state.TABLE,
        Key=to_attributes({"PK": f"NODE#{node_id}", "SK": "RES#res-1"}),
        UpdateExpression="SET lending = :p, lendingSince = :s, lendAt = :s, lendShard = :shard, "
        "createdAt = :s",
        ExpressionAttributeValues=to_attributes(
            {":p": POLICY, ":s": format_event_time(since), ":shard": "lend#00"}
        ),
    )


def _drain() -> None:
    """One pass alone first: what earlier tests left due against this emulator is lent (or
    moved on) before the round, so the round's passes race on its reservation alone."""
    concurrently([CLOCK])


def _released(db: Any, node_id: str) -> list[dict[str, Any]]:
    return state.events(db, node_id, "reservations/res-1", "reservation.released")


def test_two_passes_at_once_lend_each_unit_once(emulated, load_emulated_fleet):
    db, tally = emulated["dynamodb"], Counter[str]()
    for number in range(ROUNDS):
        node_id = f"pass-pass-{number}"
        _drain()
        _due(db, load_emulated_fleet, node_id)
        hook = barrier_after_first_read(2)
        results = concurrently([CLOCK, CLOCK], hook)
        stored = state.reservation(db, node_id, "res-1")
        fine = (
            sorted(r["lending.lent"] for r in results) == [0, 1]
            and sorted(r["lending.left"] for r in results) == [0, 1]
            and sorted(stored["releasedUnitIds"]) == UNITS
            and [e["data"]["unitIds"] for e in _released(db, node_id)] == [UNITS]
        )
        tally["attempts"] += 1
        tally["once" if fine else "violations"] += 1
    print(f"\npass-pass: {dict(tally)}")
    assert tally["violations"] == 0


def test_a_pass_and_a_placement_on_an_idle_unit_never_lend_it_under_the_claim(
    emulated, load_emulated_fleet
):
    db, tally = emulated["dynamodb"], Counter[str]()
    for number in range(ROUNDS):
        node_id = f"pass-place-{number}"
        _drain()
        _due(db, load_emulated_fleet, node_id)
        hook = barrier_after_first_read(2)
        body = {"id": "vm-lab", "kind": "vm", "tier": "reserved", "orgId": "org-lab",
                "unitIds": [UNITS[0]]}  # fmt: skip
        placement = ("place_workload", place_event(node_id, body, "Bearer vl_local_test_placer"))
        results = concurrently([CLOCK, placement], hook)
        kinds = [(e["type"], e["data"].get("unitIds")) for e in state.events(db, node_id)]
        placed_at = kinds.index(("workload.placed", [UNITS[0]]))
        lent_04 = [i for i, (kind, units) in enumerate(kinds)
                   if kind == "reservation.released" and UNITS[0] in units]  # fmt: skip
        if any(at > placed_at for at in lent_04):
            outcome = "violations"  # lent under the audience's claim
        else:
            outcome = "lent, then placed" if lent_04 else "placed, 04 not lent"
        fine = results[1].status == 201 and len(lent_04) <= 1
        tally["attempts"] += 1
        tally[outcome if fine else "violations"] += 1
        tally["re-reads"] += hook.reads.value - 2
    print(f"\npass-place: {dict(tally)}")
    assert tally["violations"] == 0


def test_a_pass_and_a_take_back_never_lend_a_unit_the_audience_took(emulated, load_emulated_fleet):
    db, tally = emulated["dynamodb"], Counter[str]()
    for number in range(ROUNDS):
        node_id = f"pass-take-{number}"
        _drain()
        _due(db, load_emulated_fleet, node_id)
        hook = barrier_after_first_read(2)
        body = {"id": "vm-lab", "kind": "vm", "tier": "reserved", "orgId": "org-lab",
                "reservationId": "res-1", "count": 1}  # fmt: skip
        placement = ("place_workload", place_event(node_id, body, "Bearer vl_local_test_placer"))
        results = concurrently([CLOCK, placement], hook)
        stored = state.reservation(db, node_id, "res-1")
        lab = state.workload(db, node_id, "vm-lab")
        (taken,) = lab["unitIds"]
        kinds = [(e["type"], e["data"].get("unitIds")) for e in state.events(db, node_id)]
        placed_at = next(i for i, (kind, _) in enumerate(kinds) if kind == "workload.placed")
        lent_after = [
            i for i, (kind, units) in enumerate(kinds)
            if kind == "reservation.released" and taken in units and i > placed_at
        ]  # fmt: skip
        fine = (
            results[1].status == 201
            and taken not in stored["releasedUnitIds"]  # the audience's, not the market's
            and not lent_after
        )
        lent_first = any(kind == "reservation.released" for kind, _ in kinds[:placed_at])
        tally["attempts"] += 1
        outcome = "lent, then taken back" if lent_first else "taken, the rest lent later"
        tally[outcome if fine else "violations"] += 1
        tally["re-reads"] += hook.reads.value - 2
    print(f"\npass-take-back: {dict(tally)}")
    assert tally["violations"] == 0
