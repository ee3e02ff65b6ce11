"""Who may create, cancel and read reservations, permission by permission and org by org,
and the node as ``PUT /v1/nodes/{nodeId}`` answers it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from reservations.logic.views import node_view
from reservations.models.api import response_json
from reservations.models.domain import Caller, Node, NodeSnapshot, Reservation, ReservationStatus
from reservations.rules.access import (
    CAPACITY,
    NODE_WRITE,
    READ,
    WRITE,
    may_read_reservation,
    may_write_reservations,
)

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
SNAPSHOT = NodeSnapshot(Node("node-a", "org-acme"))
RESERVATION = Reservation(
    "res-1",
    "node-a",
    ReservationStatus.ACTIVE,
    starts_at=NOW - timedelta(days=1),
    created_at=NOW - timedelta(days=2),
    updated_at=NOW - timedelta(days=2),
    allowed_org_ids=("org-lab",),
    managing_org_ids=("org-broker",),
    reserved_unit_ids=("0000:04:00.0",),
)
ALL = frozenset({READ, CAPACITY, WRITE, NODE_WRITE})


def caller(org: str, *permissions: str, operator: bool = False) -> Caller:
    return Caller("key-1", org, frozenset(permissions), platform_operator=operator)


@pytest.mark.parametrize(
    ("who", "allowed"),
    [
        (caller("org-platform", WRITE, operator=True), True),
        (caller("org-acme", WRITE), True),
        # Managers and the audience release and read; they do not create or cancel.
        (caller("org-broker", *ALL), False),
        (caller("org-lab", *ALL), False),
        (caller("org-other", WRITE), False),
        # The permission is needed whoever holds the key.
        (caller("org-platform", *(ALL - {WRITE}), operator=True), False),
        (caller("org-acme", *(ALL - {WRITE})), False),
    ],
)
def test_only_the_operator_and_the_owner_with_reservation_write_create_and_cancel(who, allowed):
    assert may_write_reservations(who, SNAPSHOT) is allowed


@pytest.mark.parametrize(
    ("who", "allowed"),
    [
        (caller("org-platform", READ, operator=True), True),
        (caller("org-acme", READ), True),
        (caller("org-broker", READ), True),
        (caller("org-lab", READ), True),  # the audience may read its own reservation
        (caller("org-other", READ), False),
        (caller("org-other", *ALL), False),
        (caller("org-platform", *(ALL - {READ}), operator=True), False),
        (caller("org-acme", *(ALL - {READ})), False),
        (caller("org-broker", *(ALL - {READ})), False),
        (caller("org-lab", *(ALL - {READ})), False),
    ],
)
def test_a_reservation_is_read_with_reservation_read_by_operator_owner_managers_audience(
    who, allowed
):
    assert may_read_reservation(who, SNAPSHOT, RESERVATION) is allowed


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
