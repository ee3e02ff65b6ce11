"""The layout of what the create, release, cancel, place and end endpoints write (their
events: tests/events/test_write_events.py): a workload that ends leaves its history, which
expires by the table's TTL; the readers of the reservation endpoints read back exactly what
the builders write."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devstack import template
from reservations.kernel.aws.codec import from_attributes, to_attributes
from reservations.kernel.times import LAST_MOMENT
from reservations.kernel.writes import ItemVersion
from reservations.nodes.models.partition import (
    ListAccess,
    Node,
    Reservation,
    ReservationStatus,
    Termination,
    Tier,
    Unit,
    Workload,
    WorkloadKind,
    WorkloadState,
)
from reservations.nodes.table.items import (
    access_from_item,
    access_item,
    node_from_item,
    node_item,
    reservation_from_item,
    reservation_item,
    snapshot_from_items,
    unit_item,
)
from reservations.nodes.table.keys import (
    ACCESS_SK,
    LIVE,
    LIVE_ENDS,
    access_key,
    node_key,
    reservation_key,
    unit_key,
    workload_key,
)
from reservations.workloads.table import ended_workload_item
from reservations.workloads.writes import WorkloadEnd

pytestmark = pytest.mark.disable_socket

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
STAMP = "2026-11-29T12:00:00Z"
EVENT_STAMP = "2026-11-29T12:00:00.000Z"
U = ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0"]

NODE = Node(
    "node-a",
    "org-acme",
    topology_gen=7,
    queue_url="https://sqs.test/q.fifo",
    version=3,
    created_at=NOW - timedelta(days=9),
    updated_at=NOW - timedelta(days=1),
    unit_changed_at={U[0]: 0, U[1]: 7},
    placements=12,
)
RESERVATION = Reservation(
    "res-1",
    "node-a",
    ReservationStatus.PENDING,
    starts_at=NOW + timedelta(days=1),
    created_at=NOW,
    updated_at=NOW + timedelta(seconds=1),
    ends_at=NOW + timedelta(days=30),
    allowed_org_ids=("org-lab", "org-lab2"),
    managing_org_ids=("org-broker",),
    reserved_unit_ids=(U[1], U[0]),
    released_unit_ids=(U[1],),
    contract_ref="C-1",
    reason="quarterly",
    topology_gen=7,
    version=5,
)
# Every optional field absent: an open-ended reservation with no terms beyond its units.
BARE = Reservation(
    "res-2",
    "node-a",
    ReservationStatus.ACTIVE,
    starts_at=NOW - timedelta(days=1),
    created_at=NOW - timedelta(days=2),
    updated_at=NOW - timedelta(days=2),
    reserved_unit_ids=(U[0],),
)
WORKLOAD = Workload(
    "vm-1",
    WorkloadKind.VM,
    Tier.SPOT,
    "org-spot",
    (U[1], U[0]),
    WorkloadState.RUNNING,
    created_at=NOW - timedelta(hours=5),
)
TERMINATING = Workload(
    "pod-2",
    WorkloadKind.POD,
    Tier.RESERVED,
    "org-lab",
    (U[2],),
    WorkloadState.TERMINATING,
    termination=Termination(
        id="t-1",
        reservation_id="res-1",
        reason="lab needs it",
        requested_at=NOW - timedelta(minutes=9),
    ),
)


def stored(item: dict[str, Any]) -> dict[str, Any]:
    """As DynamoDB keeps it: attribute values, absent attributes dropped."""
    return from_attributes(to_attributes(item))


def _ttl_attribute() -> str:
    [table] = [
        properties
        for properties in template.of_type("AWS::DynamoDB::Table").values()
        if properties.get("GlobalSecondaryIndexes")
    ]
    return str(table["TimeToLiveSpecification"]["AttributeName"])


def _end(workload: Workload, write_id: str = "wr-2") -> WorkloadEnd:
    freed = (ItemVersion(U[2], 4), ItemVersion(U[0], 2))
    return WorkloadEnd(
        write_id, "node-a", workload, freed, "org-platform", "key-sched", NOW, gpus=2
    )


def test_an_ended_workload_is_kept_as_history_for_its_days_then_expires():
    assert stored(ended_workload_item(_end(WORKLOAD))) == {
        "PK": "WLHIST#node-a",
        "SK": f"WL#vm-1#{EVENT_STAMP}#wr-2",  # by id, then time: its latest life is last
        "workloadId": "vm-1",
        "kind": "vm",
        "tier": "spot",
        "orgId": "org-spot",
        "unitIds": [U[1], U[0]],
        "outcome": "ended",
        "createdAt": "2026-11-29T07:00:00Z",
        "endedAt": STAMP,
        # Its own use: an item from before usedFrom counts from createdAt; 5 h on 2 GPUs.
        "usedFrom": "2026-11-29T07:00:00.000Z",
        "usedTo": EVENT_STAMP,
        "gpuMs": 5 * 3600 * 1000 * 2,
        # Kept as long as the node's other history: HistoryRetentionDays (400 by default).
        _ttl_attribute(): int((NOW + timedelta(days=400)).timestamp()),
    }


def test_an_ended_workload_counts_its_use_from_its_stored_start():
    started = replace(WORKLOAD, used_from=NOW - timedelta(milliseconds=1500))
    item = stored(ended_workload_item(_end(started)))
    assert (item["usedFrom"], item["usedTo"], item["gpuMs"]) == (
        "2026-11-29T11:59:58.500Z",
        EVENT_STAMP,
        3000,
    )


def test_an_ended_terminating_workload_keeps_its_termination_in_its_history():
    item = stored(ended_workload_item(_end(TERMINATING)))
    assert item["SK"] == f"WL#pod-2#{EVENT_STAMP}#t-1"  # one record per termination
    assert (item["terminationId"], item["reservationId"], item["outcome"]) == (
        "t-1",
        "res-1",
        "ended",
    )
    assert (item["requestedAt"], item["kind"], item["tier"]) == (
        "2026-11-29T11:51:00Z",
        "pod",
        "reserved",
    )
    assert "createdAt" not in item
    # Neither usedFrom nor createdAt (a fleet file's, stated): no use known, 0.
    assert (item["usedFrom"], item["usedTo"], item["gpuMs"]) == (EVENT_STAMP, EVENT_STAMP, 0)


def test_two_ends_of_one_workload_id_are_two_history_records():
    first = stored(ended_workload_item(_end(WORKLOAD, "wr-2")))
    second = stored(ended_workload_item(_end(WORKLOAD, "wr-3")))
    assert first["PK"] == second["PK"] == "WLHIST#node-a"
    assert first["SK"] != second["SK"]


@pytest.mark.parametrize("reservation", [RESERVATION, BARE])
def test_a_reservation_reads_back_as_written(reservation):
    assert reservation_from_item(stored(reservation_item(reservation))) == reservation


@pytest.mark.parametrize(
    "node",
    [NODE, Node("node-b", "org-acme", version=1), Node("node-c", "o", unit_changed_at={})],
)
def test_a_node_reads_back_as_written(node):
    assert node_from_item(stored(node_item(node))) == node


def test_the_node_has_the_units_its_item_lists_and_no_other():
    """A unit item the node item does not list was left by an update with no room to delete
    it: no call sees it. A node item that lists none (written before it kept the map) has
    every unit item."""
    units = [Unit(u, "vfio-group", "h100", 1, True) for u in U]
    items = [stored(unit_item("node-a", unit)) for unit in units]
    snapshot = snapshot_from_items([stored(node_item(NODE)), *items])
    assert snapshot is not None
    assert ([u.id for u in snapshot.units], [u.id for u in snapshot.unlisted_units]) == (
        U[:2],
        U[2:],
    )
    legacy = snapshot_from_items([stored(node_item(Node("node-a", "org-acme"))), *items])
    assert legacy is not None
    assert ([u.id for u in legacy.units], legacy.unlisted_units) == (U, ())


def test_the_node_key_is_where_the_node_item_is_written():
    assert node_key("node-a") == {"PK": "NODE#node-a", "SK": "#NODE"}
    assert {k: v for k, v in node_item(NODE).items() if k in ("PK", "SK")} == node_key("node-a")


def test_the_access_item_sorts_after_every_other_item_of_the_partition():
    """So that a list page, a Query from its cursor up to it, reads it whatever the cursor,
    and the calls on the node's present (a Query below it) never do."""
    keys = [
        node_key("node-a"),
        reservation_key("node-a", "res-0"),
        reservation_key("node-a", "z" * 128),
        unit_key("node-a", "ffff:ff:ff.f"),
        workload_key("node-a", "z" * 128),
    ]
    assert access_key("node-a") == {"PK": "NODE#node-a", "SK": "~ACCESS"}
    # DynamoDB orders string sort keys by their UTF-8 bytes.
    assert all(k["SK"].encode() < ACCESS_SK.encode() for k in keys)
    assert sorted([*keys, access_key("node-a")], key=lambda k: k["SK"].encode())[-1]["SK"] == (
        ACCESS_SK
    )


def test_an_access_item_reads_back_as_written_and_names_no_org_with_no_attribute():
    until = {"org-lab": datetime(2027, 1, 1, tzinfo=UTC), "org-broker": LAST_MOMENT}
    named = ListAccess("org-acme", until, {U[0]: 0, U[1]: 7})
    assert access_from_item(stored(access_item("node-a", named))) == named
    bare = access_item("node-a", ListAccess("org-acme"))
    assert not [name for name in to_attributes(bare) if name.startswith("named")]
    assert access_from_item(stored(bare)) == ListAccess("org-acme")


def test_the_workloads_orgs_on_an_access_item_read_back_as_written():
    access = ListAccess("org-acme", workload_org_ids=frozenset({"org-spot", "org-lab"}))
    item = stored(access_item("node-a", access))
    assert set(item["workloadOrgIds"]) == {"org-spot", "org-lab"}
    assert access_from_item(item) == access


def test_an_access_item_written_before_the_ends_were_kept_names_its_orgs_with_no_end():
    item = {**stored(access_item("node-a", ListAccess("org-acme"))), "namedOrgIds": {"org-old"}}
    assert access_from_item(item).named_until == {"org-old": LAST_MOMENT}


def test_only_a_reservation_with_an_end_is_in_the_movers_index_of_live_ends():
    assert stored(reservation_item(RESERVATION))[LIVE_ENDS] == LIVE
    assert LIVE_ENDS not in stored(reservation_item(BARE))  # open-ended: nothing to move
