"""`make bench` keeps working: every call it measures answers as it expects (a case that
errs would measure nothing), run in a process of its own since the bench sets its own
environment before the layer loads."""

from __future__ import annotations

import json
import subprocess
import sys

from devstack.fleet_documents import ROOT

SCRIPT = """
import json, warnings
warnings.simplefilter("ignore")
from bench import costs
print(json.dumps([[r["call"], r["requests"]] for r in costs.run(runs=1)]))
"""


def test_every_bench_case_runs_and_makes_the_requests_of_its_budget():
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    rows = dict(json.loads(result.stdout.strip().splitlines()[-1]))
    assert len(rows) == 15
    by_id = rows["reclaim k=16 (16-GPU node)"]
    for reclaim in (
        "reclaim by count=16 (keyed)",
        "reclaim as a plan's apply, 16 units (16-GPU node)",
    ):
        assert rows[reclaim] == by_id == {
            "dynamodb.Query": 1, "dynamodb.TransactWriteItems": 1, "sqs.SendMessageBatch": 2
        }, reclaim  # fmt: skip
    writes = [call for call in rows if not call.startswith(("list", "get", "reclaim"))]
    for call in writes:  # every other write: one Query, one TransactWriteItems
        assert rows[call] == {"dynamodb.Query": 1, "dynamodb.TransactWriteItems": 1}, call
    assert rows["list units, 8-GPU node, key cached"] == {"dynamodb.Query": 1}
    assert rows["list reservations (1 page)"] == {"dynamodb.Query": 1}


TRACE = """
import json, warnings
warnings.simplefilter("ignore")
from bench import trace
print(json.dumps([[r["call"], r["files"], r["kernel_files"], r["by_file"]] for r in trace.run()]))
"""


def test_the_trace_follows_each_request_into_its_slice_and_the_kernel():
    result = subprocess.run(
        [sys.executable, "-c", TRACE], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    rows = {call: (files, kernel, by_file) for call, files, kernel, by_file in
            json.loads(result.stdout.strip().splitlines()[-1])}  # fmt: skip
    assert set(rows) == {"reclaim 1 unit", "PATCH a reservation", "list units"}
    files, kernel, by_file = rows["reclaim 1 unit"]
    assert files == len(by_file) > kernel > 0
    assert any(name.startswith("capacity/") for name in by_file)  # its slice's rules ran
    assert any(name.startswith("kernel/") for name in by_file)
    assert any(name.startswith("lifecycle/") for name in rows["PATCH a reservation"][2])


USAGE = """
import json, warnings
warnings.simplefilter("ignore")
from bench import usage
rows = usage.run(pasts=((0, 0), (10, 0), (0, 30)), fleets=(1, 2), runs=1)
print(json.dumps([[r["case"], r["requests"], r["items"]] for r in rows]))
"""


def test_every_usage_bench_case_runs_at_a_small_scale():
    """The usage pages ``make bench`` measures (each insists on a 200 and on its rows), at
    pasts and fleets small enough for a test: a page only reads, and a named node's is its
    list access (a GetItem), three Queries (its checkpoint, load records, its events by
    time) and by reservation one BatchGetItem (the reservations that governed, by id)."""
    result = subprocess.run(
        [sys.executable, "-c", USAGE], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    rows = {case: (requests, items) for case, requests, items in
            json.loads(result.stdout.strip().splitlines()[-1])}  # fmt: skip
    assert len(rows) == 10
    for case, (requests, _) in rows.items():
        assert set(requests) <= {"dynamodb.Query", "dynamodb.GetItem", "dynamodb.BatchGetItem"}
        if ", nodeId," in case:
            by_id = {"dynamodb.BatchGetItem": 1} if case.startswith("by reservation") else {}
            assert requests == {"dynamodb.GetItem": 1, "dynamodb.Query": 3, **by_id}, case
    # By node: the org's node list, then each node's three (a page of one of the two nodes
    # reads both: the second says there is more). By reservation: the node list, the fleet
    # index's entries (live and ended), then the node's three.
    assert rows["by node, no nodeId, org of 2 nodes"][0]["dynamodb.Query"] == 1 + 2 * 3
    assert rows["by node, no nodeId, org of 2 nodes, a page of 1"][0] == {
        "dynamodb.Query": 1 + 2 * 3, "dynamodb.GetItem": 2}  # fmt: skip
    assert rows["by reservation, no nodeId, org of 1 node"][0]["dynamodb.Query"] == 1 + 2 + 3
