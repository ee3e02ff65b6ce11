"""A plan's apply racing the writers it is bound to, against the local emulator: a placement,
a release, another reclaim and an end, each landing between the apply's read and its write
(or, for another reclaim, deciding from the same snapshot). The apply then does nothing and
answers ``plan_stale``, never terminating a workload the plan did not name; a writer
elsewhere on the node does not stop it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from devstack import fleet_documents as f
from devstack.api_events import reclaim_event, reclaim_plan_event
from devstack.functions import invoke, load_function
from reservations.kernel.aws.codec import to_attributes
from reservations.nodes.table.keys import RESERVATION_PREFIX, UNIT_PREFIX, WORKLOAD_PREFIX, node_pk
from tests.support import state
from tests.support.forks import (
    ActBetweenFirstReadAndWrite,
    PlaceSpotWorkload,
    barrier_after_first_read,
    concurrently,
)

pytestmark = pytest.mark.races

BROKER = "Bearer vl_local_test_broker"
U = ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0", "0000:07:00.0", "0000:08:00.0"]
ELSEWHERE = "0000:0a:00.0"  # on the node, in no reservation


def _fleet(node_id: str) -> dict[str, Any]:
    """res-1 reserves U0-U4 and lends U0-U3; vm-a (spot) on U0, vm-b (spot) on U1; U2, U3
    free. A count of 3 takes U2, U3, then vm-a's U0 (the tie goes to the lowest unit)."""
    return f.fleet(
        [
            f.node(
                node_id,
                [f.unit(u) for u in (*U, ELSEWHERE)],
                [f.reservation("res-1", U, releasedUnitIds=U[:4])],
                [f.workload("vm-a", [U[0]]), f.workload("vm-b", [U[1]])],
            )
        ]
    )


def _plan(node_id: str) -> dict[str, Any]:
    """The broker's dry run by count 3, in this process (nothing races it)."""
    event = reclaim_event(node_id, "res-1", {"count": 3, "dryRun": True}, BROKER)
    result = invoke(load_function("reclaim"), event)
    assert result.status == 200, result.body
    assert result.body["reclaimedUnitIds"] == [U[0], U[2], U[3]]
    assert result.body["wouldTerminate"] == ["vm-a"]
    return result.body


def _apply(node_id: str, plan: dict[str, Any], hook: Any) -> Any:
    [result] = concurrently(
        [("reclaim", reclaim_plan_event(node_id, "res-1", plan["planId"], BROKER))], hook
    )
    return result


def _nothing_done(db: Any, sqs: Any, node_id: str) -> None:
    assert state.reservation(db, node_id, "res-1")["releasedUnitIds"][:4] == U[:4]
    assert state.workload(db, node_id, "vm-a")["state"] == "running"
    assert state.drain(sqs, state.node_queue_url(db, node_id)) == []


@dataclass(frozen=True)
class ReleaseMore:
    """A release of U4 by the reservation's manager: the reservation's version moves."""

    node_id: str

    def __call__(self, endpoint: str) -> None:
        boto3.client("dynamodb", endpoint_url=endpoint).update_item(
            TableName=state.TABLE,
            Key=to_attributes({"PK": node_pk(self.node_id), "SK": RESERVATION_PREFIX + "res-1"}),
            UpdateExpression="SET releasedUnitIds = :released, version = version + :one",
            ExpressionAttributeValues=to_attributes({":released": U, ":one": 1}),
        )


@dataclass(frozen=True)
class EndWorkload:
    """The scheduler ends a workload: it leaves the node, its units are free again."""

    node_id: str
    workload_id: str
    unit_id: str

    def __call__(self, endpoint: str) -> None:
        pk = node_pk(self.node_id)
        boto3.client("dynamodb", endpoint_url=endpoint).transact_write_items(
            TransactItems=[
                {
                    "Delete": {
                        "TableName": state.TABLE,
                        "Key": to_attributes({"PK": pk, "SK": WORKLOAD_PREFIX + self.workload_id}),
                    }
                },
                {
                    "Update": {
                        "TableName": state.TABLE,
                        "Key": to_attributes({"PK": pk, "SK": UNIT_PREFIX + self.unit_id}),
                        "UpdateExpression": "REMOVE claimedBy SET version = version + :one",
                        "ExpressionAttributeValues": to_attributes({":one": 1}),
                    }
                },
            ]
        )


def test_a_placement_on_a_planned_unit_makes_the_apply_stale(emulated, load_emulated_fleet):
    load_emulated_fleet(_fleet("plan-race-1"))
    plan = _plan("plan-race-1")
    hook = ActBetweenFirstReadAndWrite(PlaceSpotWorkload("plan-race-1", "vm-late", (U[2],)))
    result = _apply("plan-race-1", plan, hook)
    assert result.status == 409, result.body
    assert result.body["code"] == "plan_stale"
    assert f"unit {U[2]} changed" in result.body["error"]
    assert hook.reads.value == 2  # lost the write, read again, found the plan stale
    db = emulated["dynamodb"]
    _nothing_done(db, emulated["sqs"], "plan-race-1")
    assert state.workload(db, "plan-race-1", "vm-late")["state"] == "running"


def test_a_release_between_read_and_write_makes_the_apply_stale(emulated, load_emulated_fleet):
    load_emulated_fleet(_fleet("plan-race-2"))
    plan = _plan("plan-race-2")
    result = _apply("plan-race-2", plan, ActBetweenFirstReadAndWrite(ReleaseMore("plan-race-2")))
    assert result.status == 409
    assert result.body["code"] == "plan_stale"
    assert "reservation res-1 changed" in result.body["error"]
    db = emulated["dynamodb"]
    _nothing_done(db, emulated["sqs"], "plan-race-2")
    assert state.reservation(db, "plan-race-2", "res-1")["releasedUnitIds"] == U


def test_an_end_between_read_and_write_makes_the_apply_stale(emulated, load_emulated_fleet):
    load_emulated_fleet(_fleet("plan-race-3"))
    plan = _plan("plan-race-3")
    hook = ActBetweenFirstReadAndWrite(EndWorkload("plan-race-3", "vm-a", U[0]))
    result = _apply("plan-race-3", plan, hook)
    assert result.status == 409
    assert result.body["code"] == "plan_stale"
    db = emulated["dynamodb"]
    assert state.reservation(db, "plan-race-3", "res-1")["releasedUnitIds"] == U[:4]
    assert state.drain(emulated["sqs"], state.node_queue_url(db, "plan-race-3")) == []


def test_another_reclaim_from_the_same_snapshot_leaves_one_consistent_outcome(
    emulated, load_emulated_fleet
):
    load_emulated_fleet(_fleet("plan-race-4"))
    plan = _plan("plan-race-4")
    calls = [
        ("reclaim", reclaim_plan_event("plan-race-4", "res-1", plan["planId"], BROKER)),
        ("reclaim", reclaim_event("plan-race-4", "res-1", {"unitIds": [U[1]]}, BROKER)),
    ]
    applied, other = concurrently(calls, barrier_after_first_read(2))
    assert other.status == 200  # the other reclaim always lands (it retries if it lost)
    db = emulated["dynamodb"]
    released = state.reservation(db, "plan-race-4", "res-1")["releasedUnitIds"]
    messages = state.drain(emulated["sqs"], state.node_queue_url(db, "plan-race-4"))
    if applied.status == 200:  # the plan won; the other reclaim re-read and went after it
        assert released == []
        assert sorted(m["workloadId"] for m in messages) == ["vm-a", "vm-b"]
    else:  # the other won: the plan is stale and did nothing
        assert (applied.status, applied.body["code"]) == (409, "plan_stale")
        assert released == [U[0], U[2], U[3]]
        assert state.workload(db, "plan-race-4", "vm-a")["state"] == "running"
        assert [m["workloadId"] for m in messages] == ["vm-b"]


def test_a_writer_elsewhere_on_the_node_does_not_stop_the_apply(emulated, load_emulated_fleet):
    load_emulated_fleet(_fleet("plan-race-5"))
    plan = _plan("plan-race-5")
    hook = ActBetweenFirstReadAndWrite(PlaceSpotWorkload("plan-race-5", "vm-other", (ELSEWHERE,)))
    result = _apply("plan-race-5", plan, hook)
    assert result.status == 200, result.body
    assert hook.reads.value == 1  # nothing it is bound to changed: the first write landed
    assert result.body["terminated"] == ["vm-a"]
    db = emulated["dynamodb"]
    assert state.workload(db, "plan-race-5", "vm-other")["state"] == "running"
    [message] = state.drain(emulated["sqs"], state.node_queue_url(db, "plan-race-5"))
    assert message["workloadId"] == "vm-a"
