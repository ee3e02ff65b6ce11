"""The node as ``PUT /v1/nodes/{nodeId}`` answers it: its owner, generation, sorted units
and times, whatever the stored item lacks; and a workload as read, with its termination
while it is terminating."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from reservations.kernel.wire import response_json
from reservations.nodes.models.partition import (
    Node,
    Termination,
    Tier,
    Workload,
    WorkloadKind,
    WorkloadState,
)
from reservations.nodes.views import node_view, read_workload_view

pytestmark = pytest.mark.disable_socket

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
CREATED = NOW - timedelta(days=9)
UPDATED = NOW - timedelta(days=1)


def test_a_node_is_answered_with_its_owner_generation_sorted_units_and_times():
    node = Node("node-a", "org-acme", 7, "https://sqs.test/q", 3, CREATED, UPDATED)
    body = json.loads(response_json(node_view(node, ["u-2", "u-10", "u-1"], NOW)))
    assert body == {
        "id": "node-a",
        "ownerOrgId": "org-acme",
        "topologyGen": 7,
        "unitIds": ["u-1", "u-10", "u-2"],
        "createdAt": "2026-11-20T12:00:00Z",
        "updatedAt": "2026-11-28T12:00:00Z",
    }


@pytest.mark.parametrize(
    ("created_at", "updated_at", "shown"),
    [
        (CREATED, None, ("2026-11-20T12:00:00Z", "2026-11-20T12:00:00Z")),
        (None, UPDATED, ("2026-11-28T12:00:00Z", "2026-11-28T12:00:00Z")),
        (None, None, ("2026-11-29T12:00:00Z", "2026-11-29T12:00:00Z")),
    ],
)
def test_a_node_stored_without_a_time_shows_the_time_it_has_or_now(created_at, updated_at, shown):
    node = Node("node-a", "org-acme", 2, created_at=created_at, updated_at=updated_at)
    view = node_view(node, [], NOW)
    assert (view.created_at, view.updated_at) == shown


def test_a_node_stored_without_a_generation_shows_zero():
    assert node_view(Node("node-a", "org-acme"), ["u-1"], NOW).topology_gen == 0


def a_workload(state: WorkloadState, **fields: object) -> Workload:
    units = ("0000:05:00.0", "0000:04:00.0")
    return Workload("vm-1", WorkloadKind.VM, Tier.SPOT, "org-spot", units, state, **fields)  # type: ignore[arg-type]


def test_a_running_workload_is_read_with_when_it_was_placed_and_no_termination():
    # A termination id left from a reopened termination says nothing while it runs.
    running = a_workload(
        WorkloadState.RUNNING, termination=Termination(id="t-1"), created_at=CREATED
    )
    assert json.loads(response_json(read_workload_view("node-a", running))) == {
        "id": "vm-1",
        "nodeId": "node-a",
        "kind": "vm",
        "tier": "spot",
        "orgId": "org-spot",
        "unitIds": ["0000:04:00.0", "0000:05:00.0"],
        "state": "running",
        "createdAt": "2026-11-20T12:00:00Z",
        "promisedNoticeSeconds": 0,
        "promisedMinRunSeconds": 0,
    }


def test_a_terminating_workload_is_read_with_its_termination():
    terminating = a_workload(
        WorkloadState.TERMINATING,
        termination=Termination(id="t-1", reservation_id="res-1", requested_at=UPDATED),
    )
    body = json.loads(response_json(read_workload_view("node-a", terminating)))
    assert body["state"] == "terminating"
    assert body["termination"] == {
        "id": "t-1",
        "reservationId": "res-1",
        "requestedAt": "2026-11-28T12:00:00Z",
        "terminateAt": "2026-11-28T12:00:00Z",  # an item from before notices: due at once
    }
    assert "createdAt" not in body  # a workload stated by a fleet file has no placement time


def test_a_terminating_workload_without_its_termination_id_shows_none():
    body = json.loads(
        response_json(read_workload_view("node-a", a_workload(WorkloadState.TERMINATING)))
    )
    assert body["state"] == "terminating"
    assert "termination" not in body
