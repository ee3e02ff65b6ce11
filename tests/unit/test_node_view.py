"""The node as ``PUT /v1/nodes/{nodeId}`` answers it: its owner, generation, sorted units
and times, whatever the stored item lacks."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from reservations.logic.views import node_view
from reservations.models.api import response_json
from reservations.models.domain import Node

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
