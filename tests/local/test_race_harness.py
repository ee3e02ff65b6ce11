"""The race harness itself: a call that fails or hangs in its own process is reported with
where it was, never waited on for ever, and the calls still waiting for it are released."""

from __future__ import annotations

import multiprocessing
import time
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import reclaim_event
from tests.support.forks import BarrierAfterFirstRead, RaceCallFailed, Read, concurrently

pytestmark = pytest.mark.races

BROKER = "Bearer vl_local_test_broker"
UNIT = "0000:04:00.0"


class _TroubleOnNode(BarrierAfterFirstRead):
    """The usual barrier, except that a read of ``node`` raises (``hang=False``) or never
    returns (``hang=True``) before it reaches the barrier."""

    def __init__(self, parties: int, node: str, hang: bool) -> None:
        super().__init__(parties)
        self.node, self.hang = node, hang

    def wrap(self, read: Read) -> Read:
        def troubled(node_id: str) -> Any:
            if node_id == self.node:
                if self.hang:
                    time.sleep(3600)
                raise RuntimeError(f"the read of {node_id} broke in the child")
            return read(node_id)

        return super().wrap(troubled)


def _dry_runs(load: Any, nodes: list[str]) -> list[tuple[str, dict[str, Any]]]:
    load(f.fleet([f.node(n, [f.unit(UNIT)], [f.reservation("res-1", [UNIT])]) for n in nodes]))
    body = {"unitIds": [UNIT], "dryRun": True}
    return [("reclaim", reclaim_event(n, "res-1", body, BROKER)) for n in nodes]


def test_a_call_that_raises_fails_the_test_with_its_traceback_and_frees_the_others(
    emulated, load_emulated_fleet
):
    calls = _dry_runs(load_emulated_fleet, ["harness-ok-1", "harness-bad-1", "harness-ok-2"])
    hook = _TroubleOnNode(3, "harness-bad-1", hang=False)
    with pytest.raises(RaceCallFailed) as failure:
        concurrently(calls, hook)
    message = str(failure.value)
    assert "call 1 (reclaim POST /v1/nodes/harness-bad-1/reservations/res-1/reclaim)" in message
    assert "RuntimeError: the read of harness-bad-1 broke in the child" in message
    assert "Traceback" in message
    assert hook.barrier.broken  # the two calls waiting at the barrier were let go
    assert multiprocessing.active_children() == []


def test_a_call_still_running_at_its_deadline_is_killed_and_named_with_its_stack(
    emulated, load_emulated_fleet
):
    calls = _dry_runs(load_emulated_fleet, ["harness-ok-3", "harness-hung-1"])
    hook = _TroubleOnNode(2, "harness-hung-1", hang=True)
    with pytest.raises(pytest.fail.Exception) as failure:
        concurrently(calls, hook, deadline=5)
    message = str(failure.value)
    assert "call 1 (reclaim POST /v1/nodes/harness-hung-1/reservations/res-1/reclaim)" in message
    assert "1 call(s) still running at the deadline, killed" in message
    assert "call 0" not in message  # released from the barrier, it was not the one that hung
    assert "in troubled" in message  # its stack, dumped before the kill, shows where it hung
    assert multiprocessing.active_children() == []


def test_the_answers_come_back_in_the_calls_order(emulated, load_emulated_fleet):
    nodes = ["harness-order-1", "harness-order-2", "harness-order-3"]
    answers = concurrently(_dry_runs(load_emulated_fleet, nodes), BarrierAfterFirstRead(3))
    assert [a.status for a in answers] == [200, 200, 200]
    assert [a.body["nodeId"] for a in answers] == nodes
