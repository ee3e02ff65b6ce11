"""Every write's events, as its spec builds them and its transaction puts them: the event is
the write's record (who did what, why, and what it changed), in the node's feed, written
only where it is not yet, in the write's own TransactWriteItems."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from reservations.capacity.release import release_events
from reservations.kernel.aws import transactions
from reservations.kernel.aws.codec import from_attributes
from reservations.kernel.caller import Caller
from reservations.kernel.envelope import StoredEvent
from reservations.kernel.idempotency.models import AnswerRecord, IdempotentRequest, Outcome
from reservations.kernel.writes import ItemVersion
from reservations.lifecycle.cancel import cancel_events
from reservations.lifecycle.create import _create_write as create_write
from reservations.lifecycle.create import create_events
from reservations.lifecycle.reaffirm import reaffirm_events
from reservations.lifecycle.writes import ReaffirmWrite, ReservationChange, ReservationCreate
from reservations.nodes.models.partition import (
    Node,
    NodeSnapshot,
    Reservation,
    ReservationStatus,
    Tier,
    Unit,
    Workload,
    WorkloadKind,
    WorkloadState,
)
from reservations.nodes.models.writes import NodePut, PartitionWrite, TopologyRead, UnitPut
from reservations.nodes.register import node_events
from reservations.nodes.rules.events import reviews_derived
from reservations.workloads.scheduler import end_events, placement_events
from reservations.workloads.writes import PlacementWrite, WorkloadEnd
from tests.support.ports import every_writer_table

pytestmark = pytest.mark.disable_socket

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
TIME = "2026-11-29T12:00:00.000Z"
U = ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0"]
NODE = Node("node-a", "org-acme", topology_gen=7, version=3, unit_changed_at=dict.fromkeys(U, 0))
UNITS = tuple(Unit(u, "vfio-group", "h100", 1, True, version=2) for u in U)
RESERVATION = Reservation(
    "res-1",
    "node-a",
    ReservationStatus.ACTIVE,
    starts_at=NOW - timedelta(days=1),
    created_at=NOW - timedelta(days=2),
    updated_at=NOW - timedelta(days=2),
    ends_at=NOW + timedelta(days=30),
    allowed_org_ids=("org-lab",),
    managing_org_ids=("org-broker",),
    reserved_unit_ids=(U[0], U[1]),
    released_unit_ids=(U[1],),
    reason="quarterly",
    topology_gen=7,
    version=5,
)
WORKLOAD = Workload(
    "vm-1", WorkloadKind.VM, Tier.SPOT, "org-spot", (U[2],), WorkloadState.RUNNING, version=2
)
SNAPSHOT = NodeSnapshot(NODE, UNITS, (RESERVATION,), (WORKLOAD,))


def put_events(write: PartitionWrite) -> list[dict[str, Any]]:
    """The event items the write's transaction puts, conditional on being new."""
    puts = [a["Put"] for a in every_writer_table().transaction(write) if "Put" in a]
    items = [(from_attributes(put["Item"]), put.get("ConditionExpression")) for put in puts]
    feed = [(item, condition) for item, condition in items if item["PK"].startswith("NODEEVT#")]
    assert all(condition == "attribute_not_exists(PK)" for _, condition in feed)
    return [item for item, _ in feed]


def envelope(item: dict[str, Any]) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(item["event"])
    return parsed


def written(write: PartitionWrite, events: tuple[StoredEvent, ...]) -> list[dict[str, Any]]:
    """The write with its events as the pipeline adds them, and what its transaction puts."""
    return put_events(replace(write, events=events))


def _change(**changed: Any) -> ReservationChange:
    fields: dict[str, Any] = {
        "write_id": "chg-1",
        "action": "release",
        "node_id": "node-a",
        "reservation": ItemVersion("res-1", 5),
        "topology": TopologyRead("node-a", 7),
        "released_after": (U[0], U[1]),
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


def test_a_release_writes_reservation_released_with_its_caller_reason_and_releases():
    change = _change()
    [item] = written(change, release_events(SNAPSHOT, change))
    event = envelope(item)
    assert (event["type"], event["subject"], event["time"]) == (
        "reservation.released",
        "reservations/res-1",
        TIME,
    )
    assert event["data"] == {
        "actor": {"orgId": "org-broker", "keyId": "key-3"},
        "reason": "lend to spot",
        "unitIds": [U[0]],
        "releasedUnitIds": [U[0], U[1]],
    }
    assert (item["ownerOrgId"], item["audienceOrgIds"]) == ("org-acme", {"org-broker", "org-lab"})


def test_a_release_that_changes_nothing_still_writes_its_event():
    change = _change(released_after=None, reason=None)
    [item] = written(change, release_events(SNAPSHOT, change))
    assert envelope(item)["data"]["releasedUnitIds"] == [U[1]]  # as it stays
    assert "reason" not in envelope(item)["data"]


def test_a_cancel_writes_reservation_cancelled_with_the_effective_status_it_ended():
    cancel = _change(
        action="cancel",
        released_after=(),
        status_after=ReservationStatus.CANCELLED,
        status_before=ReservationStatus.NEEDS_REVIEW,
        unit_ids=(),
    )
    [item] = written(cancel, cancel_events(SNAPSHOT, cancel))
    assert envelope(item)["type"] == "reservation.cancelled"
    assert envelope(item)["data"]["previousStatus"] == "needs-review"


def test_a_create_writes_reservation_created_with_every_term():
    """At the write's own millisecond, not its createdAt (kept to the second): a
    reservation made 0.4 s after its node's registration is not created before it."""
    at = RESERVATION.created_at + timedelta(milliseconds=400, microseconds=999)
    create = ReservationCreate(
        RESERVATION, ItemVersion("node-a", 3), (), "org-acme", "key-7", at, "org-acme"
    )
    [item] = written(create, create_events(SNAPSHOT, create))
    event = envelope(item)
    assert (event["type"], event["time"]) == ("reservation.created", "2026-11-27T12:00:00.400Z")
    assert event["data"] == {
        "actor": {"orgId": "org-acme", "keyId": "key-7"},
        "status": "active",
        "startsAt": "2026-11-28T12:00:00Z",
        "endsAt": "2026-12-29T12:00:00Z",
        "unitIds": [U[0], U[1]],
        "allowedOrgIds": ["org-lab"],
        "managingOrgIds": ["org-broker"],
        "reason": "quarterly",
        "topologyGen": 7,
    }


def test_a_reaffirm_writes_reservation_reaffirmed_with_the_status_and_generation_it_took():
    write = ReaffirmWrite(
        "wr-r",
        "node-a",
        ItemVersion("res-1", 5),
        ItemVersion("node-a", 3),
        ReservationStatus.ACTIVE,
        8,
        "re-seated",
        "org-platform",
        "key-nodes",
        NOW,
    )
    [item] = written(write, reaffirm_events(SNAPSHOT, write))
    assert envelope(item)["type"] == "reservation.reaffirmed"
    assert envelope(item)["data"] == {
        "actor": {"orgId": "org-platform", "keyId": "key-nodes"},
        "reason": "re-seated",
        "status": "active",
        "topologyGen": 8,
        "unitIds": [U[0], U[1]],
    }


def test_a_placement_writes_workload_placed_seen_by_the_workload_org():
    placement = PlacementWrite(
        "wr-1",
        ItemVersion("node-a", 3),
        replace(WORKLOAD, id="vm-9", version=1),
        (ItemVersion(U[2], 2),),
        (),
        "org-platform",
        "key-sched",
        NOW,
    )
    [item] = written(placement, placement_events(SNAPSHOT, placement))
    assert (envelope(item)["type"], envelope(item)["subject"]) == (
        "workload.placed",
        "workloads/vm-9",
    )
    assert envelope(item)["data"] == {
        "actor": {"orgId": "org-platform", "keyId": "key-sched"},
        "kind": "vm",
        "tier": "spot",
        "orgId": "org-spot",
        "unitIds": [U[2]],
        "promisedNoticeSeconds": 0,
        "promisedMinRunSeconds": 0,
    }
    assert item["audienceOrgIds"] == {"org-spot"}


def test_an_end_writes_workload_ended_with_the_units_it_freed():
    end = WorkloadEnd(
        "wr-2", "node-a", WORKLOAD, (ItemVersion(U[2], 2),), "org-platform", "key-sched", NOW
    )
    [item] = written(end, end_events(SNAPSHOT, end))
    assert envelope(item)["type"] == "workload.ended"
    assert envelope(item)["data"]["freedUnitIds"] == [U[2]]


def _node_put(snapshot: NodeSnapshot | None, node: Node) -> NodePut:
    unit = UNITS[0]
    return NodePut(
        "wr-n",
        node,
        None if snapshot is None else 3,
        0,
        (
            UnitPut(replace(unit, id="0000:07:00.0"), None),
            UnitPut(replace(unit, gpu_model_id="b200"), 2),
        ),
        (ItemVersion(U[1], 2),),
        (),
        (U[0], U[1]),
        1,
        "org-platform",
        "key-nodes",
        NOW,
    )


def test_a_registration_writes_node_registered_with_every_unit_added():
    put = _node_put(None, NODE)
    [item] = written(put, node_events(None, put))
    assert envelope(item)["type"] == "node.registered"
    assert envelope(item)["data"]["addedUnitIds"] == ["0000:04:00.0", "0000:07:00.0"]
    assert "audienceOrgIds" not in item  # the operator's and the owner's alone


def test_an_update_counts_the_reservations_it_reviews_and_keeps_a_bounded_review_scope():
    """One event item, whatever the number of reservations it reviews: their count, and the
    scope the relay derives each ``reservation.needs_review`` from (deterministic ids)."""
    after = replace(NODE, topology_gen=8, unit_changed_at={U[0]: 8, U[2]: 0, "0000:07:00.0": 8})
    put = _node_put(SNAPSHOT, after)
    built = node_events(SNAPSHOT, put)
    [item] = written(put, built)
    event = envelope(item)
    assert event["type"] == "node.updated"
    assert event["data"] == {
        "actor": {"orgId": "org-platform", "keyId": "key-nodes"},
        "topologyGen": 8,
        "addedUnitIds": ["0000:07:00.0"],
        "removedUnitIds": [U[1]],
        "changedUnitIds": [U[0]],
        "reviewedReservationCount": 1,
        # the units added and changed, each with its GPUs (what usage counts GPU-ms by)
        "units": [{"id": U[0], "sellableGpus": 1}, {"id": "0000:07:00.0", "sellableGpus": 1}],
    }
    assert json.loads(item["review"]) == {
        "changeId": put.write_id, "topologyGen": 8, "unitIds": [U[0], U[1]],
        "before": dict.fromkeys(U, 0), "after": {U[0]: 8, U[2]: 0, "0000:07:00.0": 8},
    }  # fmt: skip
    [derived] = reviews_derived(built[0], [RESERVATION])
    assert derived.event.type.value == "reservation.needs_review"
    assert derived.event.subject == "reservations/res-1"
    assert derived.event.data["unitIds"] == [U[0], U[1]]
    assert derived.event.time == built[0].event.time
    assert derived.audience_org_ids == {"org-broker", "org-lab"}
    assert node_events(SNAPSHOT, put) == built  # the same ids when built again
    assert reviews_derived(node_events(SNAPSHOT, put)[0], [RESERVATION]) == [derived]


def test_a_node_update_with_many_reviews_is_one_small_event_item():
    many = tuple(replace(RESERVATION, id=f"res-{i:05}") for i in range(10_000))
    snapshot = replace(SNAPSHOT, reservations=many)
    after = replace(NODE, topology_gen=8, unit_changed_at={U[0]: 8, U[2]: 0})
    put = _node_put(snapshot, after)
    built = node_events(snapshot, put)
    assert len(built) == 1
    [item] = written(put, built)
    assert len(json.dumps(item, default=str)) < 2_000
    assert len(reviews_derived(built[0], many)) == 10_000
    assert len(every_writer_table().transaction(replace(put, events=built))) <= 100


def test_a_reaffirmed_event_says_the_status_the_reservation_takes_not_the_one_it_had():
    write = ReaffirmWrite(
        "wr-p", "node-a", ItemVersion("res-1", 5), ItemVersion("node-a", 3),
        ReservationStatus.PENDING, 8, None, "org-platform", "key-nodes", NOW,
    )  # fmt: skip
    [item] = written(write, reaffirm_events(SNAPSHOT, write))
    assert envelope(item)["data"]["status"] == "pending"  # res-1 was active as read


def test_a_create_keeps_each_org_it_names_listed_as_long_as_a_longer_reservation_names_it():
    """res-1 names org-lab for 30 more days; a create naming it for one day must not cut
    the list access's moment for org-lab short."""
    short = replace(RESERVATION, id="res-2", ends_at=NOW + timedelta(days=1), version=0)
    write = create_write(Caller("key-owner", "org-acme", frozenset()), SNAPSHOT, short, 400, NOW)
    assert write.named_until["org-lab"] == RESERVATION.ends_at + timedelta(days=400)  # type: ignore[operator]
    [access] = [a["Update"] for a in every_writer_table().transaction(write) if "~ACCESS" in str(a)]
    values = from_attributes(access["ExpressionAttributeValues"])
    until = int((RESERVATION.ends_at + timedelta(days=400)).timestamp())  # type: ignore[operator]
    assert until in values.values()


@pytest.mark.parametrize("answered", [False, True])
def test_a_node_updates_deletes_fill_the_transaction_to_100_actions_with_its_key_record(
    monkeypatch, answered
):
    """Unit deletes left over make the largest node update: they take what DynamoDB's 100
    actions leave beside the node's own items, its event and the Idempotency-Key's record."""
    sent: list[tuple[list[Any], str | None, int | None]] = []
    monkeypatch.setattr(transactions, "run", lambda *call: sent.append(call))
    leftovers = tuple(ItemVersion(f"0000:{n:02x}:00.0", 1) for n in range(150))
    put = replace(_node_put(SNAPSHOT, NODE), leftovers=leftovers)
    put = replace(put, events=node_events(SNAPSHOT, put))
    answer = AnswerRecord(IdempotentRequest("scope-1", "hash-1"), Outcome(200, "{}"), NOW, NOW)
    every_writer_table().commit(put, answer if answered else None)
    [(actions, token, record_at)] = sent
    assert (len(actions), token) == (100, "wr-n")
    assert record_at == (99 if answered else None)
    assert ("IDEMPOTENCY#" in str(actions[-1])) is answered
    assert len(every_writer_table().transaction(put)) == 100
