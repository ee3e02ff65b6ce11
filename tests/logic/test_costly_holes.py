"""The three costly behaviours of tests/handlers/test_costly_holes.py, at the logic level
over the fakes, so the fast suite (and mutation testing) catches their loss too.

The third, 401 before any 404, is decided before any use case runs (authentication in the
resolver, tests/unit/test_auth.py and the handler test); a use case only ever sees an
authenticated caller."""

from __future__ import annotations

import json
from dataclasses import replace

from reservations.logic.termination_reports import apply_report
from reservations.models.domain import Node, WorkloadState
from reservations.models.messages import TerminationReport
from reservations.models.requests import RawBody
from tests.logic.conftest import BROKER, NOW, QUEUE, UNITS, reservation, unit, workload
from tests.support.fakes import FakeTable, ports
from tests.support.writes import reclaim


def test_a_spanning_workload_reclaimed_through_two_reservations_at_once_is_terminated_once(
    clock, queue
):
    store = FakeTable(clock)
    store.add(
        Node("node-a", "org-acme", queue_url=QUEUE),
        [unit(UNITS[0], "vm:vm-span"), unit(UNITS[1], "vm:vm-span")],
        [
            reservation("res-1", reserved=(UNITS[0],), released=(UNITS[0],)),
            reservation("res-2", reserved=(UNITS[1],), released=(UNITS[1],)),
        ],
        [workload("vm-span", (UNITS[0], UNITS[1]))],
    )

    def post(res: str, unit_id: str) -> dict:
        body = RawBody(json.dumps({"unitIds": [unit_id]}))
        return json.loads(
            reclaim(BROKER, "node-a", res, body, None, ports(store, clock, queue)).body
        )

    inner: list[dict] = []
    # res-2's reclaim commits between res-1's read and its write.
    store.between_read_and_write.append(lambda: inner.append(post("res-2", UNITS[1])))
    outer = post("res-1", UNITS[0])

    assert inner[0]["terminated"] == outer["terminated"] == ["vm-span"]
    [message] = queue.sent(QUEUE)
    span = store.nodes["node-a"].workloads["vm-span"]
    assert (span.state, span.termination_id) == (WorkloadState.TERMINATING, message.termination_id)
    assert len(store.audit) == 2  # both reclaims took their units back


def test_a_late_report_leaves_a_unit_another_workload_holds_by_now(store):
    partition = store.nodes["node-a"]
    partition.workloads["vm-term"] = replace(
        partition.workloads["vm-term"], unit_ids=(UNITS[3], UNITS[4])
    )
    partition.workloads.pop("vm-res")  # UNITS[3] has since gone to vm-new
    partition.units[UNITS[3]] = replace(partition.units[UNITS[3]], claimed_by="vm:vm-new")
    report = TerminationReport(
        termination_id="t-old",
        node_id="node-a",
        workload_id="vm-term",
        outcome="terminated",
        reported_at=NOW,
    )
    assert apply_report(report, NOW, store, store) == "closed"
    assert "vm-term" not in partition.workloads
    assert partition.units[UNITS[3]].claimed_by == "vm:vm-new"
    assert partition.units[UNITS[4]].claimed_by is None
