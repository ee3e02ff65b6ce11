"""The table layout: what is written reads back as the same entity, sits where the reclaim's
conditions and the sweeper's index look for it, and expires by the table's own TTL."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devstack import template
from reservations.kernel.api_keys import api_key_from_item, apikey_item
from reservations.kernel.aws.codec import from_attributes, to_attributes
from reservations.kernel.caller import ApiKey
from reservations.kernel.idempotency.models import AnswerRecord, IdempotentRequest, Outcome
from reservations.kernel.idempotency.table import idempotency_item, stored_response_from_item
from reservations.nodes.models.partition import (
    Node,
    NodeSnapshot,
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
    node_item,
    reservation_item,
    snapshot_from_items,
    unit_item,
    workload_item,
)
from reservations.nodes.table.keys import reservation_key, unit_key, workload_key
from reservations.terminations.table.store import history_item
from reservations.terminations.writes import TerminationClose

pytestmark = pytest.mark.disable_socket

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
U = ["0000:04:00.0", "0000:05:00.0"]

NODE = Node(
    "node-a",
    "org-acme",
    topology_gen=7,
    queue_url="https://sqs.test/q.fifo",
    version=3,
    created_at=NOW - timedelta(days=9),
    updated_at=NOW - timedelta(days=1),
)
UNITS = (
    Unit(U[0], "vfio-group", "h100", 8, True, gpu_model_name="H100 SXM", claimed_by="vm:vm-1"),
    Unit(U[1], "mig-slice", "a100", 1, False, not_sellable_reason="under repair", version=9),
)
RESERVATIONS = (
    Reservation(
        "res-1",
        "node-a",
        ReservationStatus.ACTIVE,
        starts_at=NOW - timedelta(days=1),
        created_at=NOW - timedelta(days=2),
        updated_at=NOW - timedelta(hours=1),
        ends_at=NOW + timedelta(days=30),
        allowed_org_ids=("org-lab",),
        managing_org_ids=("org-broker", "org-b2"),
        reserved_unit_ids=tuple(U),
        released_unit_ids=(U[0],),
        contract_ref="C-1",
        reason="quarterly",
        topology_gen=7,
        version=5,
    ),
    Reservation(
        "res-2",
        "node-a",
        ReservationStatus.PENDING,
        starts_at=NOW + timedelta(days=1),
        created_at=NOW,
        updated_at=NOW,
    ),
)
TERMINATING = Workload(
    "vm-1",
    WorkloadKind.VM,
    Tier.SPOT,
    "org-spot",
    (U[0],),
    WorkloadState.TERMINATING,
    termination=Termination(
        id="t-1",
        reservation_id="res-1",
        reason="lab needs it",
        requested_at=NOW - timedelta(minutes=9),
        deliveries=2,
        last_delivered_at=NOW - timedelta(minutes=1),
        stuck_at=NOW,
    ),
    version=4,
    created_at=NOW - timedelta(days=3),
    used_from=NOW - timedelta(days=3, milliseconds=-318),
)
RUNNING = Workload("pod-2", WorkloadKind.POD, Tier.RESERVED, "org-lab", (), WorkloadState.RUNNING)


def stored(item: dict[str, Any]) -> dict[str, Any]:
    """As DynamoDB keeps it: attribute values, absent attributes dropped."""
    return from_attributes(to_attributes(item))


def partition() -> list[dict[str, Any]]:
    return [
        stored(item)
        for item in (
            *(workload_item("node-a", w) for w in (TERMINATING, RUNNING)),
            *(reservation_item(r) for r in RESERVATIONS),
            *(unit_item("node-a", u) for u in UNITS),
            node_item(NODE),
        )
    ]


def test_a_node_partition_reads_back_as_written():
    assert snapshot_from_items(partition()) == NodeSnapshot(
        NODE, UNITS, RESERVATIONS, (TERMINATING, RUNNING)
    )


def test_a_partition_without_its_node_item_is_an_unknown_node():
    assert snapshot_from_items([i for i in partition() if i["SK"] != "#NODE"]) is None


def test_items_of_other_kinds_in_the_partition_are_not_read_as_entities():
    other = {"PK": "NODE#node-a", "SK": "SOMETHING#else", "id": "x", "version": 1}
    assert snapshot_from_items([*partition(), other]) == snapshot_from_items(partition())


def test_every_item_sits_under_the_key_the_conditional_writes_address():
    assert {k: v for k, v in unit_item("node-a", UNITS[0]).items() if k in ("PK", "SK")} == (
        unit_key("node-a", U[0])
    )
    item = reservation_item(RESERVATIONS[0])
    assert (item["PK"], item["SK"]) == tuple(reservation_key("node-a", "res-1").values())
    item = workload_item("node-a", TERMINATING)
    assert (item["PK"], item["SK"]) == tuple(workload_key("node-a", "vm-1").values())
    assert node_item(NODE)["PK"] == item["PK"] == "NODE#node-a"


def _table() -> dict[str, Any]:
    [table] = [
        properties
        for properties in template.of_type("AWS::DynamoDB::Table").values()
        if properties.get("GlobalSecondaryIndexes")
    ]
    return table


def _index_keys() -> list[str]:
    [index] = [
        i for i in _table()["GlobalSecondaryIndexes"] if i["IndexName"] == "OpenTerminations"
    ]
    return [key["AttributeName"] for key in index["KeySchema"]]


@pytest.mark.parametrize(
    ("workload", "listed_as"),
    [
        (TERMINATING, "stuck"),
        (replace(TERMINATING, termination=replace(TERMINATING.termination, stuck_at=None)), "open"),
    ],
)
def test_a_terminating_workload_is_in_the_open_terminations_index(workload, listed_as):
    item = stored(workload_item("node-a", workload))
    partition_key, sort_key = _index_keys()
    assert item[partition_key] == listed_as
    assert item[sort_key] == "2026-11-29T11:51:00Z"


def test_a_running_workload_is_not_in_the_index():
    item = stored(workload_item("node-a", RUNNING))
    assert not set(_index_keys()) & set(item)
    assert "deliveries" not in item  # nothing about a termination is stored for it


def _ttl_attribute() -> str:
    return str(_table()["TimeToLiveSpecification"]["AttributeName"])


@pytest.mark.parametrize(
    "outcome",
    [
        Outcome(409, '{"code":"reservation_not_active"}'),
        Outcome(201, "{}", (("Location", "/v1/nodes/node-a/reservations/res-9"),)),
    ],
)
def test_an_idempotency_record_reads_back_and_expires_by_the_tables_ttl(outcome):
    answer = AnswerRecord(
        IdempotentRequest("scope-1", "hash-1"), outcome, NOW, NOW + timedelta(hours=24)
    )
    item = stored(idempotency_item(answer))
    assert (item["PK"], item["SK"]) == ("IDEMPOTENCY#scope-1", "RESPONSE")
    assert not item["PK"].startswith("NODE#")  # never in a node's partition
    read = stored_response_from_item(item)
    assert (read.request_hash, read.outcome, read.expires_at) == (
        "hash-1",
        answer.outcome,
        answer.expires_at,
    )
    assert item[_ttl_attribute()] == int((NOW + timedelta(hours=24)).timestamp())
    assert (item["createdAt"], item["expiresAt"]) == (
        "2026-11-29T12:00:00Z",
        "2026-11-30T12:00:00Z",
    )


def test_a_closed_termination_is_kept_as_history_for_its_days_then_expires():
    closing = TerminationClose("node-a", TERMINATING, "t-1", "gone", (), NOW)
    item = stored(history_item(closing))
    assert not item["PK"].startswith("NODE#")  # out of the hot partition
    assert (item["workloadId"], item["terminationId"], item["outcome"]) == ("vm-1", "t-1", "gone")
    assert (item["reservationId"], item["unitIds"], item["orgId"]) == ("res-1", [U[0]], "org-spot")
    assert (item["kind"], item["tier"]) == ("vm", "spot")
    assert (item["requestedAt"], item["terminatedAt"]) == (
        "2026-11-29T11:51:00Z",
        "2026-11-29T12:00:00Z",
    )
    # Kept as long as the node's other history: HistoryRetentionDays (400 by default).
    assert item[_ttl_attribute()] == int((NOW + timedelta(days=400)).timestamp())
    # Two closings of one workload (a termination reopened) are two records.
    again = stored(history_item(TerminationClose("node-a", TERMINATING, "t-2", "gone", (), NOW)))
    assert (again["PK"], again["SK"]) != (item["PK"], item["SK"])


@pytest.mark.parametrize(
    "api_key",
    [
        ApiKey("key-1", "org-acme", frozenset({"reservation.read"}), False),
        ApiKey(
            "key-2",
            "org-op",
            frozenset({"reservation.read", "reservation.capacity"}),
            True,
            revoked=True,
            expires_at=NOW,
        ),
    ],
)
def test_an_api_key_reads_back_as_written(api_key):
    item = stored(apikey_item("hash-1", api_key))
    assert (item["PK"], item["SK"]) == ("APIKEY#hash-1", "APIKEY")
    assert api_key_from_item(item) == api_key


def test_an_api_key_stored_without_its_flags_is_an_ordinary_live_key():
    item = stored(apikey_item("hash-1", ApiKey("key-1", "org-acme", frozenset(), False)))
    del item["platformOperator"], item["revoked"]
    read = api_key_from_item(item)
    assert (read.platform_operator, read.revoked) == (False, False)


def test_a_workload_with_failed_reports_and_its_terminations_managers_reads_back_as_written():
    # What the sweeper counts towards giving up starts after the last failed report.
    reported = replace(
        TERMINATING,
        termination=replace(
            TERMINATING.termination,
            reported_deliveries=2,
            last_reported_at=NOW - timedelta(seconds=30),
            failed_reports=3,
            managing_org_ids=("org-broker", "org-b2"),
        ),
    )
    items = [stored(workload_item("node-a", reported)), stored(node_item(NODE))]
    snapshot = snapshot_from_items(items)
    assert snapshot is not None
    assert snapshot.workloads == (reported,)
    assert items[0]["terminationManagingOrgIds"] == ["org-broker", "org-b2"]
    assert "terminationManagingOrgIds" not in stored(workload_item("node-a", TERMINATING))
