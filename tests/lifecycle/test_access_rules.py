"""Who may create, cancel and read reservations, permission by permission and org by org."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from reservations.capacity.rules.access import CAPACITY
from reservations.kernel.caller import Caller
from reservations.kernel.times import LAST_MOMENT
from reservations.lifecycle.rules.access import (
    WRITE,
    may_list_reservations,
    may_read_reservation,
    may_write_reservations,
)
from reservations.nodes.models.partition import (
    ListAccess,
    Node,
    NodeSnapshot,
    Reservation,
    ReservationStatus,
)
from reservations.nodes.rules.access import NODE_WRITE, READ

pytestmark = pytest.mark.disable_socket

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


LIST_ACCESS = ListAccess("org-acme", dict.fromkeys(("org-lab", "org-broker"), LAST_MOMENT))
LISTED_AT = datetime(2026, 12, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("who", "allowed"),
    [
        (caller("org-platform", READ, operator=True), True),
        (caller("org-acme", READ), True),
        (caller("org-lab", READ), True),  # some reservation names it
        (caller("org-other", READ), False),
        # Without reservation.read nobody lists, whoever the node's data names.
        (caller("org-platform", *(ALL - {READ}), operator=True), False),
        (caller("org-acme", *(ALL - {READ})), False),
        (caller("org-lab", *(ALL - {READ})), False),
    ],
)
def test_a_nodes_reservations_are_listed_with_reservation_read_by_whom_the_node_names(who, allowed):
    assert may_list_reservations(who, LIST_ACCESS, LISTED_AT) is allowed


def test_an_org_is_named_until_the_moment_kept_with_it_and_no_longer():
    until = datetime(2027, 1, 1, tzinfo=UTC)
    access = ListAccess("org-acme", {"org-lab": until})
    lab = caller("org-lab", READ)
    assert may_list_reservations(lab, access, until - timedelta(seconds=1))
    assert not may_list_reservations(lab, access, until)
    assert may_list_reservations(caller("org-acme", READ), access, until + timedelta(days=999))
