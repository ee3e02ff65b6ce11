"""The reclaim's TransactWriteItems, applied to an in-memory table the way DynamoDB applies
it: every condition is checked against the items as they are, then every change is made, or
nothing is. Only the expression forms the DAL writes are understood; anything else fails the
test, so a garbled expression cannot pass. (The same transaction against moto:
test_reclaim_handler.py and test_reclaim_races.py.)"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from reservations.capacity.reclaim import reclaim_events
from reservations.capacity.writes import NewTermination, ReclaimAudit, ReclaimWrite
from reservations.kernel.aws import event_items, transactions
from reservations.kernel.aws.codec import from_attributes, to_attributes
from reservations.kernel.idempotency.models import AnswerRecord, IdempotentRequest, Outcome
from reservations.kernel.writes import ItemVersion
from reservations.nodes.models.partition import (
    Node,
    Reservation,
    ReservationStatus,
    TerminationState,
    Tier,
    Unit,
    Workload,
    WorkloadKind,
    WorkloadState,
)
from reservations.nodes.models.writes import TopologyRead
from reservations.nodes.table.items import (
    node_item,
    reservation_item,
    snapshot_from_items,
    unit_item,
    workload_item,
)
from reservations.nodes.table.keys import OPEN_TERMINATION, node_events_pk
from tests.support.ports import every_writer_table

pytestmark = pytest.mark.disable_socket

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
U = ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0"]
Key = tuple[str, str]


class Cancelled(Exception):
    """TransactionCanceledException: a condition failed; nothing was written."""


def _key(item: dict[str, Any]) -> Key:
    return (item["PK"], item["SK"])


def _holds(condition: str | None, item: dict[str, Any] | None, values: dict[str, Any]) -> bool:
    if condition is None:  # unconditional
        return True
    if match := re.fullmatch(r"attribute_not_exists\((\w+)\)", condition):
        return item is None or match[1] not in item
    match = re.fullmatch(r"(\w+) = (:\w+)", condition)
    assert match, f"unexpected condition {condition!r}"
    return item is not None and item.get(match[1]) == values[match[2]]


def _updated(
    item: dict[str, Any], expression: str, names: dict[str, str], values: dict[str, Any]
) -> dict[str, Any]:
    assert expression.startswith("SET "), expression
    item = dict(item)
    for assignment in expression.removeprefix("SET ").split(", "):
        match = re.fullmatch(r"(#?\w+) = (?:(\w+) \+ )?(:\w+)", assignment)
        assert match, f"unexpected assignment {assignment!r}"
        name = names.get(match[1], match[1])
        if match[2]:
            assert match[2] == name, assignment
            item[name] = item[name] + values[match[3]]
        else:
            item[name] = values[match[3]]
    return item


_PARAMETERS = {
    "TableName",
    "Key",
    "Item",
    "ConditionExpression",
    "UpdateExpression",
    "ExpressionAttributeNames",
    "ExpressionAttributeValues",
    "ReturnValuesOnConditionCheckFailure",
}
_TYPES = {"S", "N", "B", "SS", "NS", "BS", "M", "L", "NULL", "BOOL"}


def _well_typed(value: Any) -> bool:
    """DynamoDB's attribute-value form: one type tag, spelled as DynamoDB spells it."""
    if not isinstance(value, dict) or len(value) != 1:
        return False
    [(tag, inner)] = value.items()
    if tag == "M":
        return all(_well_typed(v) for v in inner.values())
    if tag == "L":
        return all(_well_typed(v) for v in inner)
    return tag in _TYPES


def apply(table: dict[Key, dict[str, Any]], actions: list[dict[str, Any]]) -> None:
    """All or nothing, each item touched once, as TransactWriteItems."""
    staged = copy.deepcopy(table)
    touched: set[Key] = set()
    for action in actions:
        [(kind, body)] = action.items()
        assert set(body) <= _PARAMETERS, f"unknown parameters {set(body) - _PARAMETERS}"
        for attributes in ("Key", "Item", "ExpressionAttributeValues"):
            assert all(_well_typed(v) for v in body.get(attributes, {}).values()), body
        assert body["TableName"] == "ReservationsTable"
        values = from_attributes(body.get("ExpressionAttributeValues", {}))
        attributes = from_attributes(body["Item"] if kind == "Put" else body["Key"])
        key = _key(attributes)
        assert key not in touched, f"{key} touched twice in one transaction"
        touched.add(key)
        if not _holds(body.get("ConditionExpression"), table.get(key), values):
            raise Cancelled(key)
        if kind == "Put":
            staged[key] = attributes
        elif kind == "Update":
            names = body.get("ExpressionAttributeNames", {})
            staged[key] = _updated(table[key], body["UpdateExpression"], names, values)
        else:
            assert kind == "ConditionCheck", kind
    table.clear()
    table.update(staged)


RESERVATION = Reservation(
    "res-1",
    "node-a",
    ReservationStatus.ACTIVE,
    starts_at=NOW - timedelta(days=1),
    created_at=NOW - timedelta(days=2),
    updated_at=NOW - timedelta(days=2),
    reserved_unit_ids=tuple(U),
    released_unit_ids=tuple(U[:2]),
    managing_org_ids=("org-broker",),
    version=3,
)
UNITS = [Unit(u, "vfio-group", "h100", 1, True, version=2) for u in U]
RUNNING = Workload("vm-1", WorkloadKind.VM, Tier.SPOT, "org-spot", (U[0],), WorkloadState.RUNNING)
RESERVED = Workload(
    "vm-2", WorkloadKind.VM, Tier.RESERVED, "org-lab", (U[2],), WorkloadState.RUNNING, version=4
)


@pytest.fixture(autouse=True)
def recorded_now(monkeypatch: pytest.MonkeyPatch) -> None:
    """The feed's writer clock at NOW: the transaction's event is recorded then."""
    monkeypatch.setattr(event_items, "record_clock", lambda: NOW)


@pytest.fixture
def table() -> dict[Key, dict[str, Any]]:
    items = [
        node_item(Node("node-a", "org-acme", 2, unit_changed_at=dict.fromkeys(U, 0))),
        reservation_item(RESERVATION),
        *(unit_item("node-a", u) for u in UNITS),
        workload_item("node-a", RUNNING),
        workload_item("node-a", RESERVED),
    ]
    return {_key(item): from_attributes(to_attributes(item)) for item in items}


def write(
    released_after: tuple[str, ...] | None = (U[1],), reason: str | None = "lab"
) -> ReclaimWrite:
    """The write with its events, as the pipeline builds them from the node as read."""
    items = [
        node_item(Node("node-a", "org-acme", 2, unit_changed_at=dict.fromkeys(U, 0))),
        reservation_item(RESERVATION),
        *(unit_item("node-a", u) for u in UNITS),
        workload_item("node-a", RUNNING),
        workload_item("node-a", RESERVED),
    ]
    read = snapshot_from_items(from_attributes(to_attributes(item)) for item in items)
    bare = _bare(released_after, reason)
    return replace(bare, events=reclaim_events(read, bare))


def _bare(released_after: tuple[str, ...] | None, reason: str | None) -> ReclaimWrite:
    return ReclaimWrite(
        write_id="rc-1",
        node_id="node-a",
        reservation=ItemVersion("res-1", 3),
        topology=TopologyRead("node-a", 2),
        released_after=released_after,
        units=(ItemVersion(U[0], 2), ItemVersion(U[2], 2)),
        terminations=(NewTermination(ItemVersion("vm-1", 1), "t-1"),),
        unchanged_workloads=(ItemVersion("vm-2", 4),),
        reason=reason,
        audit=ReclaimAudit((U[0], U[2]), U[:2], ("vm-1",), ("vm-2",)),
        caller_org_id="org-broker",
        caller_key_id="key-broker",
        at=NOW,
        managing_org_ids=("org-broker",),
    )


def events(table: dict[Key, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The node feed's events by type, as their envelopes."""
    feed = [i for k, i in table.items() if k[0] == node_events_pk("node-a")]
    return {item["type"]: json.loads(item["event"]) for item in feed}


def snapshot(table: dict[Key, dict[str, Any]]) -> Any:
    return snapshot_from_items(i for k, i in table.items() if k[0] == "NODE#node-a")


def test_applied_to_what_was_read_it_releases_terminates_and_writes_its_events(table):
    apply(table, every_writer_table().transaction(write()))
    after = snapshot(table)
    [reservation] = after.reservations
    assert reservation.released_unit_ids == (U[1],)
    assert (reservation.updated_at, reservation.version) == (NOW, 4)
    workloads = {w.id: w for w in after.workloads}
    terminating = workloads["vm-1"]
    assert terminating.state is WorkloadState.TERMINATING
    assert (terminating.termination.id, terminating.termination.reservation_id) == ("t-1", "res-1")
    assert (terminating.termination.requested_at, terminating.termination.reason) == (NOW, "lab")
    assert terminating.version == 2
    assert workloads["vm-2"] == RESERVED  # skipped: checked, not changed
    assert after.units == tuple(UNITS)  # the units are checked; reports free them later
    # The outbox: the terminating workload is in the sparse OpenTerminations index.
    stored = table[("NODE#node-a", "WL#vm-1")]
    assert (stored[OPEN_TERMINATION], stored["terminationRequestedAt"]) == (
        TerminationState.OPEN,
        "2026-11-29T12:00:00Z",
    )
    assert stored["terminationManagingOrgIds"] == ["org-broker"]  # its end is theirs too
    written = events(table)
    assert set(written) == {"reservation.reclaimed", "workload.termination_requested"}
    data = written["reservation.reclaimed"]["data"]
    assert data["actor"] == {"orgId": "org-broker", "keyId": "key-broker"}
    assert (data["terminated"], data["skipped"], data["reason"]) == (["vm-1"], ["vm-2"], "lab")
    assert (data["unitIds"], data["releasedUnitIds"]) == ([U[0], U[2]], [U[1]])
    requested = written["workload.termination_requested"]
    assert requested["subject"] == "workloads/vm-1"
    assert (requested["data"]["terminationId"], requested["data"]["reservationId"]) == (
        "t-1",
        "res-1",
    )


@pytest.mark.parametrize(
    "moved", ["RES#res-1", f"UNIT#{U[0]}", f"UNIT#{U[2]}", "WL#vm-1", "WL#vm-2"]
)
@pytest.mark.parametrize("released_after", [(U[1],), None])
def test_any_item_decided_from_that_moved_on_cancels_it_whole(table, moved, released_after):
    table[("NODE#node-a", moved)]["version"] += 1
    before = copy.deepcopy(table)
    with pytest.raises(Cancelled):
        apply(table, every_writer_table().transaction(write(released_after)))
    assert table == before


def test_a_node_update_since_the_read_cancels_it_and_a_create_does_not(table):
    """An update may have put the reservation under review without writing it: the node's
    generation is what the reclaim read its effective status from. A create only bumps the
    node's version."""
    table[("NODE#node-a", "#NODE")]["version"] += 1
    apply(table, every_writer_table().transaction(write()))
    table[("NODE#node-a", "#NODE")]["topologyGen"] = 3
    before = copy.deepcopy(table)
    with pytest.raises(Cancelled):
        apply(table, every_writer_table().transaction(write(released_after=None)))
    assert table == before


@pytest.mark.parametrize("gone", ["RES#res-1", f"UNIT#{U[0]}", "WL#vm-1", "WL#vm-2"])
def test_an_item_deleted_since_the_read_cancels_it(table, gone):
    del table[("NODE#node-a", gone)]
    with pytest.raises(Cancelled):
        apply(table, every_writer_table().transaction(write()))


def test_unchanged_releases_leave_the_reservation_as_it_was(table):
    apply(table, every_writer_table().transaction(write(released_after=None)))
    [reservation] = snapshot(table).reservations
    assert reservation == RESERVATION  # version and updatedAt untouched: only checked
    # Its event still says what stays released.
    assert events(table)["reservation.reclaimed"]["data"]["releasedUnitIds"] == U[:2]


def test_without_a_reason_the_termination_has_none(table):
    apply(table, every_writer_table().transaction(write(reason=None)))
    assert "terminationReason" not in table[("NODE#node-a", "WL#vm-1")]


def test_the_same_reclaim_cannot_be_written_twice(table):
    actions = every_writer_table().transaction(write(released_after=None))
    apply(table, actions)
    with pytest.raises(Cancelled):  # its events exist: a replayed transaction is refused
        apply(table, actions)


def test_the_answer_is_recorded_in_the_same_transaction_as_the_effect(monkeypatch):
    sent: list[Any] = []
    monkeypatch.setattr(transactions, "run", lambda *sent_as: sent.append(sent_as))
    answer = AnswerRecord(
        IdempotentRequest("scope-1", "hash-1"), Outcome(200, "{}"), NOW, NOW + timedelta(days=1)
    )
    every_writer_table().commit(write(), answer)
    every_writer_table().commit(write())
    [(keyed, keyed_token, record_at), (plain, plain_token, no_record)] = sent
    assert keyed[:-1] == plain == every_writer_table().transaction(write())
    assert from_attributes(keyed[-1]["Put"]["Item"])["PK"] == "IDEMPOTENCY#scope-1"
    # The reclaim id is the request token; the record's index lets a cancellation be read.
    assert (keyed_token, record_at) == ("rc-1", len(keyed) - 1)
    assert (plain_token, no_record) == ("rc-1", None)


@pytest.mark.parametrize("which", [0, 1])
def test_an_event_already_there_cancels_it(table, which):
    actions = every_writer_table().transaction(write())
    puts = [a["Put"] for a in actions if "Put" in a]
    assert len(puts) == 2  # reservation.reclaimed, one workload.termination_requested
    item = from_attributes(puts[which]["Item"])
    table[(item["PK"], item["SK"])] = item
    with pytest.raises(Cancelled):
        apply(table, actions)


def test_its_event_names_the_reclaim_the_caller_and_every_decision(table):
    """The event is the reclaim's record: who, why, the units, what it terminated and
    skipped; in the node's feed, unrelayed, by its time, expiring with the retention."""
    apply(table, every_writer_table().transaction(write()))
    feed = {k: i for k, i in table.items() if k[0] == "NODEEVT#node-a"}
    [reclaimed] = [i for i in feed.values() if i["type"] == "reservation.reclaimed"]
    event_id = reclaimed["eventId"]
    assert event_id.startswith("evt-")
    assert {k: v for k, v in reclaimed.items() if k != "event"} == {
        "PK": "NODEEVT#node-a",
        "SK": f"2026-11-29T12:00:00.000Z#{event_id}",
        "eventId": event_id,
        "type": "reservation.reclaimed",
        "ownerOrgId": "org-acme",
        "audienceOrgIds": {"org-broker"},
        "unrelayed": event_items.relay_mark("node-a"),  # its node's mark: "pending#4"
        "eventTime": f"2026-11-29T12:00:00.000Z#{event_id}",  # its place by time
        "expiresAtEpoch": int((NOW + timedelta(days=400)).timestamp()),
    }
    assert json.loads(reclaimed["event"]) == {
        "specversion": "1.0",
        "id": event_id,
        "type": "reservation.reclaimed",
        "source": "/v1/nodes/node-a",
        "subject": "reservations/res-1",
        "time": "2026-11-29T12:00:00.000Z",
        "datacontenttype": "application/json",
        "data": {
            "actor": {"orgId": "org-broker", "keyId": "key-broker"},
            "reason": "lab",
            "unitIds": [U[0], U[2]],
            "releasedUnitIds": [U[1]],
            "terminated": ["vm-1"],
            "skipped": ["vm-2"],
        },
    }
    # The same write rebuilt (a retry of the same decision) carries the same ids.
    assert [a["Put"]["Item"] for a in every_writer_table().transaction(write()) if "Put" in a] == [
        a["Put"]["Item"] for a in every_writer_table().transaction(write()) if "Put" in a
    ]
