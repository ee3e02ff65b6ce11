"""The layout of what the create, release, cancel, place and end endpoints write: each audit
record names the caller's org and key id, the reason and what changed; a workload that ends
leaves its history, which expires by the table's TTL; the readers of the reservation
endpoints read back exactly what the builders write."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devstack import template
from reservations.dal.items import (
    access_from_item,
    access_item,
    from_attributes,
    node_from_item,
    node_item,
    reservation_from_item,
    reservation_item,
    snapshot_from_items,
    to_attributes,
    unit_item,
)
from reservations.dal.keys import (
    ACCESS_SK,
    access_key,
    node_key,
    reservation_key,
    unit_key,
    workload_key,
)
from reservations.dal.records import (
    HISTORY_DAYS,
    change_audit_item,
    create_audit_item,
    ended_workload_item,
    node_audit_item,
    placement_audit_item,
    reaffirm_audit_item,
    workload_end_audit_item,
)
from reservations.models.domain import (
    ListAccess,
    Node,
    Reservation,
    ReservationStatus,
    Tier,
    Unit,
    Workload,
    WorkloadKind,
    WorkloadState,
)
from reservations.models.writes import (
    ItemVersion,
    NodePut,
    PlacementWrite,
    ReaffirmWrite,
    ReservationChange,
    ReservationCreate,
    TopologyRead,
    UnitPut,
    WorkloadEnd,
)

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
STAMP = "2026-11-29T12:00:00Z"
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
    termination_id="t-1",
    termination_reservation_id="res-1",
    termination_reason="lab needs it",
    termination_requested_at=NOW - timedelta(minutes=9),
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


def test_a_create_is_audited_with_its_caller_and_every_term_outside_the_node_partition():
    create = ReservationCreate(
        RESERVATION, ItemVersion("node-a", 3), (), "org-acme", "key-7", "org-acme"
    )
    assert stored(create_audit_item(create)) == {
        "PK": "AUDIT#node-a#res-1",
        "SK": f"{STAMP}#create",
        "action": "create",
        "nodeId": "node-a",
        "reservationId": "res-1",
        "callerOrgId": "org-acme",
        "callerKeyId": "key-7",
        "reason": "quarterly",
        "status": "pending",
        "unitIds": [U[1], U[0]],
        "allowedOrgIds": ["org-lab", "org-lab2"],
        "managingOrgIds": ["org-broker"],
        "startsAt": "2026-11-30T12:00:00Z",
        "endsAt": "2026-12-29T12:00:00Z",
        "contractRef": "C-1",
        "topologyGen": 7,
        "at": STAMP,
    }


def test_a_create_without_optional_terms_stores_none_of_them():
    create = ReservationCreate(BARE, ItemVersion("node-a", 3), (), "org-op", "key-1", "org-acme")
    item = stored(create_audit_item(create))
    assert not {"reason", "endsAt", "contractRef", "topologyGen"} & set(item)
    assert (item["PK"], item["SK"]) == ("AUDIT#node-a#res-2", "2026-11-27T12:00:00Z#create")
    assert (item["status"], item["allowedOrgIds"], item["managingOrgIds"]) == ("active", [], [])


def _change(**changed: Any) -> ReservationChange:
    fields: dict[str, Any] = {
        "write_id": "chg-1",
        "action": "release",
        "node_id": "node-a",
        "reservation": ItemVersion("res-1", 5),
        "topology": TopologyRead("node-a", 3),
        "released_after": (U[1], U[0]),
        "status_after": None,
        "reason": "lend to spot",
        "caller_org_id": "org-broker",
        "caller_key_id": "key-3",
        "unit_ids": (U[0],),
        "released_before": (U[1],),
        "status_before": ReservationStatus.ACTIVE,
        "at": NOW,
    }
    return ReservationChange(**(fields | changed))


def test_a_release_is_audited_with_its_caller_reason_and_releases_before_and_after():
    assert stored(change_audit_item(_change())) == {
        "PK": "AUDIT#node-a#res-1",
        "SK": f"{STAMP}#chg-1",
        "action": "release",
        "changeId": "chg-1",
        "nodeId": "node-a",
        "reservationId": "res-1",
        "callerOrgId": "org-broker",
        "callerKeyId": "key-3",
        "reason": "lend to spot",
        "unitIds": [U[0]],
        "releasedBefore": [U[1]],
        "releasedAfter": [U[1], U[0]],
        "statusBefore": "active",
        "statusAfter": "active",
        "at": STAMP,
    }


def test_a_cancel_is_audited_with_the_status_it_left_and_the_releases_it_emptied():
    cancel = _change(
        action="cancel", released_after=(), status_after=ReservationStatus.CANCELLED, unit_ids=()
    )
    item = stored(change_audit_item(cancel))
    assert (item["action"], item["statusBefore"], item["statusAfter"]) == (
        "cancel",
        "active",
        "cancelled",
    )
    assert (item["releasedBefore"], item["releasedAfter"]) == ([U[1]], [])


def test_a_change_that_changes_nothing_audits_the_releases_and_status_as_they_stay():
    item = stored(change_audit_item(_change(released_after=None, reason=None)))
    assert item["releasedAfter"] == item["releasedBefore"] == [U[1]]
    assert item["statusAfter"] == item["statusBefore"] == "active"
    assert "reason" not in item


def test_two_changes_of_one_reservation_at_the_same_instant_are_two_records():
    first = stored(change_audit_item(_change()))
    second = stored(change_audit_item(_change(write_id="chg-2")))
    assert first["PK"] == second["PK"]
    assert first["SK"] != second["SK"]


def test_a_placement_is_audited_with_the_caller_the_workload_and_the_reservations_it_used():
    placement = PlacementWrite(
        "wr-1",
        ItemVersion("node-a", 3),
        WORKLOAD,
        (ItemVersion(U[1], 1), ItemVersion(U[0], 1)),
        (ItemVersion("res-9", 2), ItemVersion("res-1", 5)),
        "org-platform",
        "key-sched",
        NOW,
    )
    assert stored(placement_audit_item(placement)) == {
        "PK": "AUDIT#node-a/workloads",
        "SK": f"{STAMP}#wr-1",
        "action": "place",
        "nodeId": "node-a",
        "workloadId": "vm-1",
        "kind": "vm",
        "tier": "spot",
        "orgId": "org-spot",
        "unitIds": [U[1], U[0]],
        "reservationIds": ["res-1", "res-9"],
        "callerOrgId": "org-platform",
        "callerKeyId": "key-sched",
        "at": STAMP,
    }


@pytest.mark.parametrize(("node_read", "action"), [(None, "register-node"), (3, "update-node")])
def test_a_node_write_is_audited_with_its_units_and_the_reservations_it_put_in_review(
    node_read, action
):
    unit = Unit(U[0], "vfio-group", "h100", 1, True)
    write = NodePut(
        "wr-n",
        NODE,
        node_read,
        12,
        (UnitPut(replace(unit, id=U[1]), None), UnitPut(unit, 1)),
        (ItemVersion(U[2], 4),),
        (),
        (U[0], U[2]),
        2,
        "org-platform",
        "key-nodes",
        NOW,
    )
    assert stored(node_audit_item(write)) == {
        "PK": "AUDIT#node-a",
        "SK": f"{STAMP}#wr-n",
        "action": action,
        "nodeId": "node-a",
        "ownerOrgId": "org-acme",
        "topologyGen": 7,
        "unitsPut": [U[0], U[1]],
        "unitsRemoved": [U[2]],
        "unitsChanged": [U[0], U[2]],
        "reservationsReviewed": 2,
        "callerOrgId": "org-platform",
        "callerKeyId": "key-nodes",
        "at": STAMP,
    }


def test_a_reaffirm_is_audited_with_the_status_and_generation_it_took():
    write = ReaffirmWrite(
        "wr-r",
        "node-a",
        ItemVersion("res-1", 4),
        ItemVersion("node-a", 3),
        ReservationStatus.ACTIVE,
        7,
        "re-seated",
        "org-platform",
        "key-nodes",
        NOW,
    )
    assert stored(reaffirm_audit_item(write)) == {
        "PK": "AUDIT#node-a#res-1",
        "SK": f"{STAMP}#wr-r",
        "action": "reaffirm",
        "nodeId": "node-a",
        "reservationId": "res-1",
        "reason": "re-seated",
        "status": "active",
        "topologyGen": 7,
        "callerOrgId": "org-platform",
        "callerKeyId": "key-nodes",
        "at": STAMP,
    }
    bare = stored(reaffirm_audit_item(replace(write, reason=None, topology_gen=None)))
    assert "reason" not in bare
    assert "topologyGen" not in bare


def _end(workload: Workload, write_id: str = "wr-2") -> WorkloadEnd:
    freed = (ItemVersion(U[2], 4), ItemVersion(U[0], 2))
    return WorkloadEnd(write_id, "node-a", workload, freed, "org-platform", "key-sched", NOW)


def test_an_end_is_audited_with_the_caller_and_the_units_it_freed():
    assert stored(workload_end_audit_item(_end(TERMINATING))) == {
        "PK": "AUDIT#node-a/workloads",
        "SK": f"{STAMP}#wr-2",
        "action": "end",
        "nodeId": "node-a",
        "workloadId": "pod-2",
        "state": "terminating",
        "terminationId": "t-1",
        "unitIds": [U[2]],
        "freedUnitIds": [U[0], U[2]],
        "callerOrgId": "org-platform",
        "callerKeyId": "key-sched",
        "at": STAMP,
    }
    running = stored(workload_end_audit_item(_end(WORKLOAD)))
    assert (running["state"], "terminationId" in running) == ("running", False)


def test_an_ended_workload_is_kept_as_history_for_its_days_then_expires():
    assert stored(ended_workload_item(_end(WORKLOAD))) == {
        "PK": "WLHIST#node-a",
        "SK": f"{STAMP}#vm-1#wr-2",
        "workloadId": "vm-1",
        "kind": "vm",
        "tier": "spot",
        "orgId": "org-spot",
        "unitIds": [U[1], U[0]],
        "outcome": "ended",
        "createdAt": "2026-11-29T07:00:00Z",
        "endedAt": STAMP,
        _ttl_attribute(): int((NOW + timedelta(days=HISTORY_DAYS)).timestamp()),
    }


def test_an_ended_terminating_workload_keeps_its_termination_in_its_history():
    item = stored(ended_workload_item(_end(TERMINATING)))
    assert item["SK"] == f"{STAMP}#pod-2#t-1"  # the termination's record, one per termination
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
    named = ListAccess("org-acme", frozenset({"org-lab", "org-broker"}), {U[0]: 0, U[1]: 7})
    assert access_from_item(stored(access_item("node-a", named))) == named
    bare = access_item("node-a", ListAccess("org-acme"))
    assert "namedOrgIds" not in to_attributes(bare)
    assert access_from_item(stored(bare)) == ListAccess("org-acme")
