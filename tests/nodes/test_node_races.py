"""Node writes racing each other, a placement and a reclaim, against the local emulator
(one DynamoDB request at a time, as DynamoDB's per-item atomicity). Each call runs in its
own forked process, as in its own Lambda container; a barrier after each one's first read
makes them decide from the same snapshot."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import node_event, reclaim_event
from devstack.fleets import NODE_QUEUE_PREFIX
from reservations.kernel.aws import clients
from reservations.nodes.rules.status import effective_status
from reservations.nodes.table.store import NodeTable
from reservations_tools.fleet.loader import local_dead_letter_arn
from tests.support import state
from tests.support.forks import (
    ActBetweenFirstReadAndWrite,
    PlaceSpotWorkload,
    barrier_after_first_read,
    concurrently,
)

pytestmark = pytest.mark.races

OPERATOR = "Bearer vl_local_test_node_operator"
BROKER = "Bearer vl_local_test_broker"
KEYS = [
    {"key": "vl_local_test_node_operator", "orgId": "org-platform", "permissions": ["node.write"]}
]
U4, U5, U6 = "0000:04:00.0", "0000:05:00.0", "0000:06:00.0"


@pytest.fixture
def node_env(emulated: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NODE_QUEUE_PREFIX", NODE_QUEUE_PREFIX)
    monkeypatch.setenv("NODE_DEAD_LETTER_QUEUE_ARN", local_dead_letter_arn(emulated["sqs"]))
    clients.reset()


def _fleet(node_id: str) -> dict[str, Any]:
    return f.fleet(
        [
            f.node(
                node_id,
                [f.unit(u) for u in (U4, U5, U6)],
                [f.reservation("res-1", [U4, U5, U6], releasedUnitIds=[U5, U6])],
                [f.workload("vm-a", [U5])],
            )
        ],
        KEYS,
    )


def effective(_db: Any, node_id: str, reservation_id: str) -> str:
    """The reservation's status as every reader derives it (a node update writes none)."""
    snapshot = NodeTable().load_node(node_id)  # the test's own read (hooks wrap the calls' only)
    assert snapshot is not None
    [reservation] = [r for r in snapshot.reservations if r.id == reservation_id]
    return effective_status(reservation, snapshot.node, datetime.now(UTC)).value


def _body(gen: int, units: list[str], **changes: Any) -> dict[str, Any]:
    return {
        "ownerOrgId": "org-acme",
        "topologyGen": gen,
        "units": [f.unit(u, **changes) for u in units],
    }


def test_two_updates_to_one_generation_one_wins_the_other_is_stale(
    emulated, node_env, load_emulated_fleet
):
    load_emulated_fleet(_fleet("nrace-1"))
    hook = barrier_after_first_read(2)
    first, second = concurrently(
        [
            ("put_node", node_event("nrace-1", _body(2, [U4, U5, U6], gpuModelId="a"), OPERATOR)),
            ("put_node", node_event("nrace-1", _body(2, [U4, U5, U6], gpuModelId="b"), OPERATOR)),
        ],
        hook,
    )
    assert sorted((first.status, second.status)) == [200, 409]
    loser = first if first.status == 409 else second
    assert loser.body["code"] == "stale_topology"
    assert hook.reads.value == 3  # the loser read again and found generation 2 taken
    winner_model = "a" if first.status == 200 else "b"
    db = emulated["dynamodb"]
    assert {state.unit(db, "nrace-1", u)["gpuModelId"] for u in (U4, U5, U6)} == {winner_model}
    assert effective(db, "nrace-1", "res-1") == "needs-review"
    assert len(state.events(db, "nrace-1")) == 1


def test_an_update_removing_a_unit_never_removes_one_a_placement_just_claimed(
    emulated, node_env, load_emulated_fleet
):
    load_emulated_fleet(_fleet("nrace-2"))
    db = emulated["dynamodb"]
    # Between the update's read and its write, the scheduler places a spot VM on 06.
    hook = ActBetweenFirstReadAndWrite(PlaceSpotWorkload("nrace-2", "vm-late", (U6,)))
    [result] = concurrently(
        [("put_node", node_event("nrace-2", _body(2, [U4, U5]), OPERATOR))], hook
    )
    assert (result.status, result.body["code"]) == (409, "units_unavailable")
    assert hook.reads.value == 2
    assert state.unit(db, "nrace-2", U6)["claimedBy"] == "vm:vm-late"
    assert state.item(db, "nrace-2", "#NODE")["topologyGen"] == 1
    assert effective(db, "nrace-2", "res-1") == "active"


def test_an_update_removing_a_released_unit_races_its_reclaim_without_a_lost_write(
    emulated, node_env, load_emulated_fleet
):
    load_emulated_fleet(_fleet("nrace-3"))
    hook = barrier_after_first_read(2)
    update, reclaim = concurrently(
        [
            ("put_node", node_event("nrace-3", _body(2, [U4, U5]), OPERATOR)),
            ("reclaim", reclaim_event("nrace-3", "res-1", {"unitIds": [U6]}, BROKER)),
        ],
        hook,
    )
    db = emulated["dynamodb"]
    reservation = state.reservation(db, "nrace-3", "res-1")
    assert update.status == 200  # a reclaim never blocks a topology change
    assert state.item(db, "nrace-3", "UNIT#" + U6) is None
    assert effective(db, "nrace-3", "res-1") == "needs-review"
    if reclaim.status == 200:
        # The reclaim went first: its effect survived the update, which writes no
        # reservation and so committed on its first read.
        assert hook.reads.value == 2
        assert reservation["releasedUnitIds"] == [U5]
        assert len(state.reservation_events(db, "nrace-3", "res-1")) == 1
    else:  # the update went first: the reclaim read again and saw the reservation in review
        assert hook.reads.value == 3
        assert (reclaim.status, reclaim.body["code"]) == (409, "reservation_not_active")
        assert reservation["releasedUnitIds"] == [U5, U6]
        assert state.reservation_events(db, "nrace-3", "res-1") == []
