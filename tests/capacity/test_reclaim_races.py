"""Reclaims racing each other and the spot scheduler, against the local emulator.

The emulator serves one DynamoDB request at a time, like DynamoDB's per-item atomicity, so
a conditional write that should fail does fail. Each reclaim runs in its own forked process,
as in its own Lambda container (Powertools keeps the request in hand in class state, so two
requests must not share a process). A barrier after each one's first read forces them to
decide from the same snapshot.
"""

from __future__ import annotations

from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import reclaim_event
from tests.support import state
from tests.support.forks import (
    ActBetweenFirstReadAndWrite,
    PlaceSpotWorkload,
    ReadHook,
    barrier_after_first_read,
    concurrently,
)

pytestmark = pytest.mark.races

BROKER = "Bearer vl_local_test_broker"
UNITS = ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0"]


def _fleet(node_id: str) -> dict[str, Any]:
    return f.fleet(
        [
            f.node(
                node_id,
                [f.unit(u) for u in UNITS],
                [f.reservation("res-1", UNITS, releasedUnitIds=UNITS)],
                [f.workload("vm-a", ["0000:04:00.0"]), f.workload("vm-b", ["0000:05:00.0"])],
            )
        ]
    )


def _reclaims(
    calls: list[tuple[str, dict[str, Any]]], hook: ReadHook, key: str | None = None
) -> list[Any]:
    """The broker's reclaims of res-1, (node, body) each, all at once."""
    events = [reclaim_event(node_id, "res-1", body, BROKER, key) for node_id, body in calls]
    return concurrently([("reclaim", event) for event in events], hook)


def test_two_reclaims_of_different_units_both_take_effect(emulated, load_emulated_fleet):
    load_emulated_fleet(_fleet("race-1"))
    hook = barrier_after_first_read(2)
    first, second = _reclaims(
        [("race-1", {"unitIds": ["0000:04:00.0"]}), ("race-1", {"unitIds": ["0000:05:00.0"]})],
        hook,
    )
    assert (first.status, second.status) == (200, 200)
    assert hook.reads.value == 3  # one of the two lost the write, re-read and retried
    db = emulated["dynamodb"]
    assert state.reservation(db, "race-1", "res-1")["releasedUnitIds"] == ["0000:06:00.0"]
    assert {w: state.workload(db, "race-1", w)["state"] for w in ("vm-a", "vm-b")} == {
        "vm-a": "terminating",
        "vm-b": "terminating",
    }
    assert len(state.reservation_events(db, "race-1", "res-1")) == 2
    messages = state.drain(emulated["sqs"], state.node_queue_url(db, "race-1"))
    assert sorted(m["workloadId"] for m in messages) == ["vm-a", "vm-b"]


def test_concurrent_identical_reclaims_send_exactly_one_message_per_workload(
    emulated, load_emulated_fleet
):
    load_emulated_fleet(_fleet("race-2"))
    body = {"unitIds": ["0000:04:00.0", "0000:05:00.0"]}
    results = _reclaims([("race-2", body)] * 4, barrier_after_first_read(4))
    assert [r.status for r in results] == [200] * 4
    assert all(r.body["terminated"] == ["vm-a", "vm-b"] for r in results)
    db = emulated["dynamodb"]
    messages = state.drain(emulated["sqs"], state.node_queue_url(db, "race-2"))
    assert sorted(m["workloadId"] for m in messages) == ["vm-a", "vm-b"]
    ids = {m["workloadId"]: m["terminationId"] for m in messages}
    for workload_id, termination_id in ids.items():
        assert state.workload(db, "race-2", workload_id)["terminationId"] == termination_id


def test_concurrent_identical_keyed_reclaims_have_one_effect_and_one_answer(
    emulated, load_emulated_fleet
):
    load_emulated_fleet(_fleet("race-4"))
    body = {"unitIds": ["0000:04:00.0", "0000:05:00.0"], "reason": "twins"}
    results = _reclaims([("race-4", body)] * 3, barrier_after_first_read(3), key="twin-key")
    assert [r.status for r in results] == [200] * 3
    assert len({r.body_text for r in results}) == 1  # byte for byte the same answer
    db = emulated["dynamodb"]
    assert len(state.reservation_events(db, "race-4", "res-1")) == 1
    messages = state.drain(emulated["sqs"], state.node_queue_url(db, "race-4"))
    assert sorted(m["workloadId"] for m in messages) == ["vm-a", "vm-b"]


def test_a_spot_vm_placed_between_read_and_write_is_terminated_by_the_retry(
    emulated, load_emulated_fleet
):
    load_emulated_fleet(_fleet("race-3"))
    db = emulated["dynamodb"]
    # Between the reclaim's read and its write, the scheduler places a spot VM on 06.
    hook = ActBetweenFirstReadAndWrite(PlaceSpotWorkload("race-3", "vm-late", ("0000:06:00.0",)))
    [result] = _reclaims([("race-3", {"unitIds": ["0000:06:00.0"]})], hook)
    assert result.status == 200
    assert hook.reads.value == 2
    assert result.body["terminated"] == ["vm-late"]
    assert state.workload(db, "race-3", "vm-late")["state"] == "terminating"
    [message] = state.drain(emulated["sqs"], state.node_queue_url(db, "race-3"))
    assert message["workloadId"] == "vm-late"


@pytest.mark.parametrize("order", ["short-first", "long-first"])
def test_concurrent_notices_leave_the_earliest_deadline_whoever_commits_first(
    emulated, load_emulated_fleet, order
):
    node = f"race-notice-{order}"
    load_emulated_fleet(_fleet(node))
    notices = [30, 3600] if order == "short-first" else [3600, 30]
    calls = [(node, {"unitIds": ["0000:04:00.0"], "noticeSeconds": n}) for n in notices]
    results = _reclaims(calls, barrier_after_first_read(2))
    assert [r.status for r in results] == [200, 200]
    answered = {n: r.body["terminateAt"] for n, r in zip(notices, results, strict=True)}
    db = emulated["dynamodb"]
    workload = state.workload(db, node, "vm-a")
    assert workload["terminateAt"] == answered[30]  # the earlier deadline, whatever the order
    messages = state.drain(emulated["sqs"], state.node_queue_url(db, node))
    assert {m["terminationId"] for m in messages} == {workload["terminationId"]}
    # The node's last word is the earliest deadline: the message that carries it was sent.
    assert answered[30] in {m["terminateAt"] for m in messages}
