"""The exact requests the DAL sends and how it reads each answer, against a recording
client (no moto): the key conditions, consistency, page size and index of every read, the
condition of every write, and what each error DynamoDB or SQS may answer becomes. Moto
accepts a weaker read (not consistent, no limit) and cannot show which was asked for; these
are the requests the design's guarantees rest on."""

from __future__ import annotations

import copy
import json
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from reservations.events.models import EventsRead, NodeFeedAccess, PendingEvent, UnreadableEvent
from reservations.events.table import feeds as events
from reservations.events.table import outlets as event_outlets
from reservations.events.table.keys import PLATFORM_FEED, event_key, org_events_pk
from reservations.kernel.api_keys import key_id_of, keyid_key
from reservations.kernel.aws import clients, event_items, queries, transactions
from reservations.kernel.aws.actions import put
from reservations.kernel.aws.batches import sized_batches
from reservations.kernel.aws.codec import to_attributes
from reservations.kernel.envelope import StoredEvent
from reservations.kernel.event_log import record_position
from reservations.kernel.idempotency.models import AnswerRecord, IdempotentRequest, Outcome
from reservations.kernel.idempotency.table import idempotency_item
from reservations.kernel.times import format_event_time
from reservations.kernel.writes import ItemVersion, WriteConflict
from reservations.lifecycle.table.changes import change_actions
from reservations.lifecycle.table.create import create_actions
from reservations.lifecycle.table.reaffirm import reaffirm_actions
from reservations.lifecycle.writes import ReaffirmWrite, ReservationChange, ReservationCreate
from reservations.nodes.models.partition import (
    ListAccess,
    ReservationStatus,
    ReviewScope,
    Termination,
    Tier,
    Unit,
    Workload,
    WorkloadKind,
    WorkloadState,
)
from reservations.nodes.models.writes import NodePut, TopologyRead, UnitPut
from reservations.nodes.table import queries as node_queries
from reservations.nodes.table import queue as node_queue
from reservations.nodes.table.actions import topology_check
from reservations.nodes.table.items import (
    access_item,
    node_item,
    reservation_history_item,
    reservation_item,
)
from reservations.nodes.table.keys import node_events_pk, reservation_history_key, reservation_key
from reservations.nodes.table.store import NodeTable
from reservations.nodes.table.writes import node_put_actions
from reservations.terminations.models import (
    OpenTermination,
    SendResult,
    SpotTermination,
    TerminationReport,
)
from reservations.terminations.table import queues
from reservations.terminations.table.store import TerminationTable
from reservations.webhooks.table.platform import platform_key
from reservations.workloads.table import placement_actions, workload_end_actions
from reservations.workloads.writes import PlacementWrite, WorkloadEnd
from tests.support.event_scenario import NODE_A, RES_1, VM_1, every_type

pytestmark = pytest.mark.disable_socket

TABLE = "ReservationsTable"
# The TTL of an event that never expires: the end of year 9999, UTC.
LAST_EPOCH = 253402300800
T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


class Recorder:
    """A boto3 client that records each call (a copy of its arguments, as they were when
    sent) and gives the next answer queued for that operation (an exception is raised)."""

    def __init__(self, **answers: list[Any]) -> None:
        self.answers = {name: list(queue) for name, queue in answers.items()}
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __getattr__(self, operation: str) -> Any:
        def call(**kwargs: Any) -> Any:
            self.calls.append((operation, copy.deepcopy(kwargs)))
            answer = self.answers[operation].pop(0)
            if isinstance(answer, Exception):
                raise answer
            return answer

        return call


def client_error(code: str | None, operation: str = "PutItem") -> ClientError:
    response: dict[str, Any] = {"Error": {"Code": code, "Message": "no"}} if code else {}
    return ClientError(response, operation)  # type: ignore[arg-type]


def down() -> EndpointConnectionError:
    return EndpointConnectionError(endpoint_url="http://127.0.0.1:1")


@pytest.fixture
def dynamodb(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Installs a recorder as the DAL's DynamoDB client; ``.answers`` is set by the test."""
    recorder = Recorder()
    monkeypatch.setattr(clients, "dynamodb", lambda: recorder)
    return recorder


REVIEW = ReviewScope("wr-1", 3, frozenset({"0000:04:00.0"}), None, {"0000:04:00.0": 3})
# When the writes of these tests are recorded (the feeds' writer clock, pinned).
RECORDED = T0 + timedelta(days=1, milliseconds=5)


@pytest.fixture(autouse=True)
def record_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(event_items, "record_clock", lambda: RECORDED)


def at_record(stored: StoredEvent) -> str:
    """Where an item of ``stored`` written by these tests is recorded."""
    return record_position(RECORDED, stored.id)


def stored_events() -> list[StoredEvent]:
    """Events as the node feed keeps them: with their expiry and where they were recorded;
    one with an audience and a node update's review scope, one with neither."""
    made = every_type()
    # The TTL is kept to the second.
    kept = [
        replace(
            s,
            expires_at=(s.event.time + timedelta(days=400)).replace(microsecond=0),
            position=at_record(s),
        )
        for s in made
    ]
    with_review = replace(kept[1], review=REVIEW)
    return [with_review, kept[0]]


def as_items(stored: list[StoredEvent]) -> list[dict[str, Any]]:
    return [
        to_attributes(event_items.event_item(s, node_events_pk(s.event.node_id), 400, at_record(s)))
        for s in stored
    ]


# --- feeds ------------------------------------------------------------------------------------


def test_a_feed_page_is_one_consistent_limited_query_read_back_whole(dynamodb):
    written = stored_events()
    dynamodb.answers = {"query": [{"Items": as_items(written)}]}
    read = events.read_feed("NODEEVT#node-a", None, "2026-12-02T00:00:00.000Z", 3)
    assert dynamodb.calls == [
        (
            "query",
            {
                "TableName": TABLE,
                "KeyConditionExpression": "PK = :pk AND SK < :before",
                "ExpressionAttributeValues": {
                    ":pk": {"S": "NODEEVT#node-a"},
                    ":before": {"S": "2026-12-02T00:00:00.000Z"},
                },
                "ConsistentRead": True,
                "Limit": 3,
            },
        )
    ]
    assert read == EventsRead(tuple(written), None)
    assert read.events[0].review == REVIEW
    assert read.events[0].audience_org_ids
    assert read.events[1].audience_org_ids == frozenset()
    assert read.events[1].review is None


def test_a_feed_page_after_a_position_starts_past_it_and_says_where_it_stopped(dynamodb):
    stopped = {"PK": {"S": "NODEEVT#node-a"}, "SK": {"S": "2026-11-30T12:00:09.009Z#e"}}
    dynamodb.answers = {"query": [{"Items": [], "LastEvaluatedKey": stopped}]}
    read = events.read_feed(
        "NODEEVT#node-a", "2026-11-30T12:00:01.001Z#~", "2026-11-30T12:00:10.000Z", 51
    )
    (_, query) = dynamodb.calls[0]
    # BETWEEN is inclusive: its lower bound is just past the position, before any item's.
    assert query["KeyConditionExpression"] == "PK = :pk AND SK BETWEEN :after AND :before"
    assert query["ExpressionAttributeValues"] == {
        ":pk": {"S": "NODEEVT#node-a"},
        ":after": {"S": "2026-11-30T12:00:01.001Z#~ "},
        ":before": {"S": "2026-11-30T12:00:10.000Z"},
    }
    assert query["ConsistentRead"] is True
    assert query["Limit"] == 51
    assert read == EventsRead((), "2026-11-30T12:00:09.009Z#e")


def test_an_event_item_without_expiry_reads_back_as_never_expiring(dynamodb):
    (stored,) = stored_events()[1:]
    item = event_items.event_item(
        stored, node_events_pk(stored.event.node_id), 400, at_record(stored)
    )
    del item["expiresAtEpoch"]
    read = events.stored_event_from_item(item)
    assert read == replace(stored, expires_at=None)


def test_the_table_reads_the_node_feed_and_the_org_and_operator_feeds(dynamodb):
    dynamodb.answers = {"query": [{"Items": []}] * 5}
    table = events.EventTable()
    table.node_events("node-a", None, "q", 5)
    table.org_events("org-lab", 0, "p", "q", 6)
    table.org_events(None, 0, None, "q", 7)
    table.org_events(None, 31, None, "q", 8)
    table.org_events("org-lab", 3, None, "q", 9)
    partitions = [call["ExpressionAttributeValues"][":pk"]["S"] for _, call in dynamodb.calls]
    assert partitions == [
        node_events_pk("node-a"),
        org_events_pk("org-lab"),
        PLATFORM_FEED,  # shard 0 is the feed's own partition: the feed as it was
        "ORGEVT#/platform#31",
        "ORGEVT#org-lab#3",
    ]
    assert [call["Limit"] for _, call in dynamodb.calls] == [5, 6, 7, 8, 9]
    assert dynamodb.calls[1][1]["ExpressionAttributeValues"][":after"] == {"S": "p "}
    assert {c["ExpressionAttributeValues"][":before"]["S"] for _, c in dynamodb.calls} == {"q"}


NAMED = {"org-lab": T0 + timedelta(days=30), "org-broker": T0 + timedelta(days=400)}


@pytest.mark.parametrize("workload_orgs", [frozenset({"org-spot", "org-walkin"}), frozenset()])
def test_who_may_read_a_node_feed_is_one_consistent_get_of_its_list_access(dynamodb, workload_orgs):
    access = ListAccess("org-acme", NAMED, workload_org_ids=workload_orgs)
    dynamodb.answers = {"get_item": [{"Item": to_attributes(access_item("node-a", access))}]}
    read = events.EventTable().feed_access("node-a")
    assert read == NodeFeedAccess("org-acme", NAMED, workload_orgs)
    assert dynamodb.calls == [
        (
            "get_item",
            {
                "TableName": TABLE,
                "Key": {"PK": {"S": "NODE#node-a"}, "SK": {"S": "~ACCESS"}},
                "ConsistentRead": True,
            },
        )
    ]


@pytest.mark.parametrize("answer", [{}, {"Item": {}}])
def test_a_node_without_list_access_has_no_feed(dynamodb, answer):
    dynamodb.answers = {"get_item": [answer]}
    assert events.feed_access("node-b") is None


# --- the relay ----------------------------------------------------------------------------


def test_derived_events_are_put_99_a_transaction_with_the_progress_they_make(dynamodb):
    many = [replace(stored_events()[1], event=replace(stored_events()[1].event, id=f"evt-{n}"))
            for n in range(99)]  # fmt: skip
    update = stored_events()[0]
    key = to_attributes(event_key(node_events_pk(update.event.node_id), str(update.position)))
    dynamodb.answers = {"transact_write_items": [{}]}
    step = events.ReviewProgress(update, "RES#res-1", "RES#res-99")
    assert events.put_derived(many, 30, step) == set()
    [(_, call)] = dynamodb.calls
    assert len(call["TransactItems"]) == 100
    assert call["TransactItems"][98] == {
        "Put": {
            "TableName": TABLE,
            "Item": to_attributes(
                event_items.event_item(
                    many[98], node_events_pk(many[98].event.node_id), 30, at_record(many[98])
                )
            ),
            "ConditionExpression": "attribute_not_exists(PK)",
        }
    }
    # Only from the value the relay read, and never bringing back an item the TTL deleted.
    assert call["TransactItems"][99] == {
        "Update": {
            "TableName": TABLE,
            "Key": key,
            "UpdateExpression": "SET #after = :after",
            "ConditionExpression": "attribute_exists(PK) AND #after = :read",
            "ExpressionAttributeNames": {"#after": "reviewedAfter"},
            "ExpressionAttributeValues": {":after": {"S": "RES#res-99"},
                                          ":read": {"S": "RES#res-1"}},
        }
    }  # fmt: skip


def test_the_first_step_of_a_derivation_is_recorded_only_where_none_is():
    update = stored_events()[0]
    action = events.progress_update(events.ReviewProgress(update, None, "RES#res-99"))
    assert action["Update"]["ConditionExpression"] == (
        "attribute_exists(PK) AND attribute_not_exists(#after)"
    )
    assert action["Update"]["ExpressionAttributeValues"] == {":after": {"S": "RES#res-99"}}


def test_more_derived_events_than_a_transaction_takes_with_its_progress_are_refused(dynamodb):
    many = [replace(stored_events()[1], event=replace(stored_events()[1].event, id=f"evt-{n}"))
            for n in range(100)]  # fmt: skip
    with pytest.raises(ValueError, match="100 derived events"):
        events.put_derived(many, 30)
    assert dynamodb.calls == []


def refused_for(*codes: str) -> ClientError:
    response: dict[str, Any] = {
        "Error": {"Code": "TransactionCanceledException", "Message": "no"},
        "CancellationReasons": [{"Code": code} for code in codes],
    }
    return ClientError(response, "TransactWriteItems")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("failure", "answers", "failed"),
    [
        (refused_for("None", "ThrottlingError"), [], {"evt-0", "evt-1"}),
        (client_error("ProvisionedThroughputExceededException"), [], {"evt-0", "evt-1"}),
        (down(), [], {"evt-0", "evt-1"}),
    ],
)
def test_derived_events_dynamodb_did_not_take_are_answered(dynamodb, failure, answers, failed):
    two = [replace(stored_events()[1], event=replace(stored_events()[1].event, id=f"evt-{n}"))
           for n in range(2)]  # fmt: skip
    dynamodb.answers = {"transact_write_items": [failure], "put_item": answers}
    assert events.put_derived(two, 30) == failed


def test_the_unrelayed_events_are_read_page_by_page_from_every_marks_index_partition(dynamodb):
    first, second = stored_events()
    other = replace(first, event=replace(first.event, id="evt-other"))

    def at(stored: StoredEvent, seconds: int) -> dict[str, Any]:
        position = record_position(RECORDED + timedelta(seconds=seconds), stored.id)
        item = event_items.event_item(stored, node_events_pk(stored.event.node_id), 400, position)
        return to_attributes(item)

    more = {"PK": {"S": "NODEEVT#node-a"}, "SK": {"S": "x"}, "unrelayed": {"S": "pending"}}
    bad = {
        "PK": {"S": "NODEEVT#node-a"},
        "SK": {"S": record_position(RECORDED + timedelta(seconds=3), "evt-y")},
    }
    empty: dict[str, Any] = {"Items": []}
    dynamodb.answers = {
        "query": [
            {"Items": [at(first, 1)], "LastEvaluatedKey": more},  # mark 0, its first page
            *[empty] * 4,
            {"Items": [at(other, 2)]},  # mark 5
            *[empty] * 26,
            {"Items": [bad, at(second, 4)]},  # mark 0, its second page
        ]
    }
    read = list(events.RelayMarks().unrelayed("2026-12-01T00:00:00.000Z", 25))

    def query(mark: str) -> dict[str, Any]:
        return {
            "TableName": TABLE,
            "IndexName": "UnrelayedEvents",
            "KeyConditionExpression": "#mark = :pending AND SK < :before",
            "ExpressionAttributeNames": {"#mark": "unrelayed"},
            "ExpressionAttributeValues": {
                ":pending": {"S": mark},
                ":before": {"S": "2026-12-01T00:00:00.000Z"},
            },
            "Limit": 25,
        }

    marks = ["pending", *(f"pending#{k}" for k in range(1, 32))]
    assert dynamodb.calls == [
        *[("query", query(mark)) for mark in marks],
        ("query", {**query("pending"), "ExclusiveStartKey": more}),
    ]
    # Oldest first across the marks.
    assert [r.stored.id if isinstance(r, PendingEvent) else r.key for r in read] == [
        first.id,
        other.id,
        f"NODEEVT#node-a {bad['SK']['S']}",
        second.id,
    ]
    assert read[2] == UnreadableEvent(f"NODEEVT#node-a {bad['SK']['S']}", "KeyError('event')")


def test_a_node_feed_page_after_a_position_reads_past_it(dynamodb):
    dynamodb.answers = {"query": [{"Items": []}]}
    events.EventTable().node_events("node-a", "2026-11-30T12:00:01.001Z#~", "z", 5)
    (_, query) = dynamodb.calls[0]
    assert query["ExpressionAttributeValues"][":after"] == {"S": "2026-11-30T12:00:01.001Z#~ "}


def test_a_review_scope_is_kept_as_compact_json_and_read_back():
    (with_review, _) = stored_events()
    text = event_items.event_item(
        with_review, node_events_pk(with_review.event.node_id), 400, at_record(with_review)
    )["review"]
    assert text == json.dumps(json.loads(text), separators=(",", ":"))
    assert ReviewScope.from_json(text) == REVIEW


def test_an_expiry_past_year_9999_is_the_last_utc_second_in_any_local_zone(monkeypatch):
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        (stored,) = stored_events()[1:]
        assert event_items.expires_at(stored, 3_000_000) == datetime.max.replace(tzinfo=UTC)
        item = event_items.event_item(
            stored, node_events_pk(stored.event.node_id), 3_000_000, at_record(stored)
        )
        assert item["expiresAtEpoch"] == LAST_EPOCH
        never = replace(stored, expires_at=None)
        fanned = events.feed_items(never, at_record(never))
        assert {item["expiresAtEpoch"] for item in fanned} == {LAST_EPOCH}
    finally:
        monkeypatch.undo()
        time.tzset()


def test_a_relayed_item_says_which_outlets_the_event_already_reached():
    (stored,) = stored_events()[1:]
    item = {
        **event_items.event_item(
            stored, node_events_pk(stored.event.node_id), 400, at_record(stored)
        ),
        "relayedTo": {"feeds", "bus"},
    }
    assert events.pending_event_from_item(item) == PendingEvent(stored, frozenset({"feeds", "bus"}))
    del item["relayedTo"]
    assert events.pending_event_from_item(item) == PendingEvent(stored, frozenset())


def stream_record(name: str, partition: str | None, image: dict[str, Any]) -> dict[str, Any]:
    keys = {"PK": {"S": partition}} if partition else {}
    return {"eventName": name, "dynamodb": {"Keys": keys, "NewImage": image}}


def test_only_a_stream_insert_of_a_node_feed_item_is_an_event_to_relay():
    (stored,) = stored_events()[1:]
    image = to_attributes(
        {
            **event_items.event_item(
                stored, node_events_pk(stored.event.node_id), 400, at_record(stored)
            ),
            "relayedTo": {"feeds"},
        }
    )
    insert = stream_record("INSERT", "NODEEVT#node-a", image)
    assert events.pending_event_from_stream(insert) == PendingEvent(stored, frozenset({"feeds"}))
    assert events.pending_event_from_stream({**insert, "eventName": "MODIFY"}) is None
    assert (
        events.pending_event_from_stream(stream_record("INSERT", "ORGEVT#org-lab", image)) is None
    )
    # A record without the parts a node feed insert has is not one (never an error).
    assert events.pending_event_from_stream({"eventName": "INSERT"}) is None
    assert events.pending_event_from_stream({"eventName": "INSERT", "dynamodb": {}}) is None
    assert events.pending_event_from_stream(stream_record("INSERT", None, image)) is None
    no_string = {"eventName": "INSERT", "dynamodb": {"Keys": {"PK": {"B": "eA=="}}}}
    assert events.pending_event_from_stream(no_string) is None


def test_settling_an_event_that_reached_some_outlets_adds_them_if_it_is_still_there(dynamodb):
    (stored,) = stored_events()[1:]
    dynamodb.answers = {"update_item": [{}]}
    assert events.RelayMarks().settle(stored, frozenset({"feeds"}), done=False) is True
    key = to_attributes(event_key(node_events_pk("node-a"), at_record(stored)))
    assert dynamodb.calls == [
        (
            "update_item",
            {
                "TableName": TABLE,
                "Key": key,
                "ConditionExpression": "attribute_exists(PK)",
                "UpdateExpression": "ADD relayedTo :reached",
                "ExpressionAttributeValues": {":reached": {"SS": ["feeds"]}},
            },
        )
    ]


def test_settling_an_event_that_reached_every_outlet_takes_it_off_the_index(dynamodb):
    (stored,) = stored_events()[1:]
    dynamodb.answers = {"update_item": [{}]}
    assert events.RelayMarks().settle(stored, frozenset({"feeds", "bus"}), done=True) is True
    (_, update) = dynamodb.calls[0]
    assert update["ConditionExpression"] == "attribute_exists(PK)"
    assert update["UpdateExpression"] == "REMOVE #mark, relayedTo"
    assert update["ExpressionAttributeNames"] == {"#mark": "unrelayed"}
    assert "ExpressionAttributeValues" not in update


@pytest.mark.parametrize(
    ("failure", "settled"),
    [
        (client_error("ConditionalCheckFailedException", "UpdateItem"), True),  # expired
        (client_error("ProvisionedThroughputExceededException", "UpdateItem"), False),
        (client_error(None, "UpdateItem"), False),
        (down(), False),
    ],
)
def test_a_settle_dynamodb_did_not_take_is_false_but_an_expired_event_is_settled(
    dynamodb, failure, settled
):
    dynamodb.answers = {"update_item": [failure]}
    (stored,) = stored_events()[1:]
    assert events.RelayMarks().settle(stored, frozenset(), done=True) is settled


# --- the relay's outlets: the org feeds and the bus --------------------------------------------


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The pauses the org feeds take between tries (none is waited out)."""
    taken: list[float] = []
    monkeypatch.setattr(event_outlets.time, "sleep", taken.append)
    return taken


def feed_writes(stored: list[StoredEvent]) -> list[tuple[str, dict[str, Any]]]:
    """The org feed writes of events relayed together: a millisecond apart, in order."""
    return [(s.id, {"PutRequest": {"Item": to_attributes(item)}})
            for n, s in enumerate(stored)
            for item in events.feed_items(
                s, record_position(RECORDED + timedelta(milliseconds=n), s.id))]  # fmt: skip


def test_org_feed_items_dynamodb_left_unprocessed_are_sent_again_alone(dynamodb, pauses):
    first, second = stored_events()
    writes = feed_writes([first, second])
    left = writes[-1][1]
    dynamodb.answers = {
        "batch_write_item": [{"UnprocessedItems": {TABLE: [left]}}, {"UnprocessedItems": {}}]
    }
    assert event_outlets.OrgFeeds().deliver([first, second]) == set()
    assert dynamodb.calls == [
        ("batch_write_item", {"RequestItems": {TABLE: [w for _, w in writes]}}),
        ("batch_write_item", {"RequestItems": {TABLE: [left]}}),
    ]
    assert pauses == [0.05]


def test_org_feed_items_still_unprocessed_after_three_tries_fail_their_event_only(dynamodb, pauses):
    first, second = stored_events()
    (owner, left) = feed_writes([first, second])[-1]
    dynamodb.answers = {"batch_write_item": [{"UnprocessedItems": {TABLE: [left]}}] * 3}
    assert event_outlets.OrgFeeds().deliver([first, second]) == {owner}
    assert len(dynamodb.calls) == 3
    assert pauses == [0.05, 0.1]  # doubling between tries, none after the last


def test_an_org_feed_batch_dynamodb_refused_fails_its_events_and_not_the_next_batchs(
    dynamodb, pauses
):
    every = every_type()
    writes = feed_writes(every)
    assert len(writes) > 25  # two batches of BatchWriteItem at least
    later = len(range(25, len(writes), 25))
    dynamodb.answers = {"batch_write_item": [down()] + [{}] * later}
    assert event_outlets.OrgFeeds().deliver(every) == {owner for owner, _ in writes[:25]}
    assert len(dynamodb.calls) == 1 + later


@pytest.fixture
def bus(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Installs a recorder as the relays' EventBridge client."""
    recorder = Recorder()
    monkeypatch.setattr(clients, "events", lambda: recorder)
    return recorder


def test_each_event_goes_on_the_bus_with_its_type_and_operator_view(bus):
    first, second = stored_events()
    bus.answers = {"put_events": [{"Entries": [{"EventId": "e-1"}, {"EventId": "e-2"}]}]}
    assert event_outlets.EventBus().deliver([first, second]) == set()
    entry = {"Source": "reservations", "DetailType": first.event.type.value,
             "Detail": first.event.to_json(), "Time": first.event.time, "EventBusName": "EventBus"}  # fmt: skip
    ((operation, request),) = bus.calls
    assert operation == "put_events"
    assert request["Entries"][0] == entry
    assert [e["DetailType"] for e in request["Entries"]] == [
        first.event.type.value,
        second.event.type.value,
    ]


def test_a_bus_entry_without_an_event_id_or_with_an_error_code_is_not_delivered(bus):
    every = every_type()[:5]
    bus.answers = {
        "put_events": [
            {
                "Entries": [
                    {"EventId": "e-1"},
                    {"ErrorCode": "InternalFailure", "ErrorMessage": "no"},
                    {},
                    {"EventId": "e-4", "ErrorCode": "ThrottlingException"},
                ]  # and none for the fifth
            }
        ]
    }
    assert event_outlets.EventBus().deliver(every) == {s.id for s in every[1:]}


def test_a_bus_answer_without_entries_delivers_nothing(bus):
    every = every_type()[:3]
    bus.answers = {"put_events": [{"FailedEntryCount": 0}]}
    assert event_outlets.EventBus().deliver(every) == {s.id for s in every}


def test_a_bus_batch_eventbridge_refused_fails_its_events_and_not_the_next_batchs(bus):
    every = every_type()
    assert len(every) > 10  # PutEvents takes ten
    ok = {"Entries": [{"EventId": f"e-{n}"} for n in range(len(every) - 10)]}
    bus.answers = {"put_events": [down(), ok]}
    assert event_outlets.EventBus().deliver(every) == {s.id for s in every[:10]}
    assert [len(call["Entries"]) for _, call in bus.calls] == [10, len(every) - 10]


# --- terminations -------------------------------------------------------------------------


def test_a_nodes_owner_is_one_get_of_that_attribute(dynamodb):
    table = TerminationTable(dynamodb, "Other")
    dynamodb.answers = {"get_item": [{"Item": {"ownerOrgId": {"S": "org-acme"}}}]}
    assert table.node_owner("node-a") == "org-acme"
    assert dynamodb.calls == [
        (
            "get_item",
            {
                "TableName": "Other",
                "Key": {"PK": {"S": "NODE#node-a"}, "SK": {"S": "#NODE"}},
                "ProjectionExpression": "ownerOrgId",
            },
        )
    ]


@pytest.mark.parametrize(
    "answer", [{}, {"Item": {}}, {"Item": {"ownerOrgId": {"S": ""}}}, {"Item": {"x": {"S": "o"}}}]
)
def test_a_node_without_an_owner_has_none(dynamodb, answer):
    dynamodb.answers = {"get_item": [answer]}
    assert TerminationTable(dynamodb).node_owner("node-a") is None
    assert dynamodb.calls[0][1]["TableName"] == TABLE


def terminating(failed_reports: int) -> OpenTermination:
    workload = Workload(
        "vm-1", WorkloadKind.VM, Tier.SPOT, "org-spot", ("0000:06:00.0",),
        WorkloadState.TERMINATING, termination=Termination(id="term-1", reservation_id="res-2", requested_at=T0, failed_reports=failed_reports),
    )  # fmt: skip
    return OpenTermination("node-a", workload)


@pytest.mark.parametrize(
    ("reports", "unanswered", "values"),
    [
        (0, "attribute_not_exists(terminationFailedReports)", {}),
        (2, "terminationFailedReports = :reports", {":reports": {"N": "2"}}),
    ],
)
def test_a_stuck_mark_moves_the_termination_with_its_event_unless_it_was_answered(
    dynamodb, reports, unanswered, values
):
    stuck = stored_events()[1]
    dynamodb.answers = {"transact_write_items": [{}]}
    table = TerminationTable(dynamodb, "Other")
    assert table.mark_stuck(terminating(reports), T0, stuck) is True
    event = event_items.event_put(stuck, node_events_pk(stuck.event.node_id), 400)
    event["Put"]["TableName"] = "Other"
    update = {
        "TableName": "Other",
        "Key": {"PK": {"S": "NODE#node-a"}, "SK": {"S": "WL#vm-1"}},
        "UpdateExpression": "SET openTermination = :stuck, stuckAt = :now",
        "ConditionExpression": "terminationId = :tid AND openTermination = :open AND " + unanswered,
        "ExpressionAttributeValues": {
            ":stuck": {"S": "stuck"},
            ":now": {"S": "2026-11-30T12:00:00Z"},
            ":open": {"S": "open"},
            ":tid": {"S": "term-1"},
            **values,
        },
    }
    assert dynamodb.calls == [
        ("transact_write_items", {"TransactItems": [{"Update": update}, event]})
    ]


def test_a_stuck_mark_that_lost_to_a_close_or_a_report_writes_nothing(dynamodb):
    dynamodb.answers = {
        "transact_write_items": [
            client_error("TransactionCanceledException"),
            client_error("ThrottlingException"),
        ]
    }
    table = TerminationTable(dynamodb)
    assert table.mark_stuck(terminating(0), T0, stored_events()[1]) is False
    with pytest.raises(ClientError):
        table.mark_stuck(terminating(0), T0, stored_events()[1])


def test_a_nodes_queue_url_is_one_get_of_that_attribute(dynamodb):
    table = TerminationTable(dynamodb, "Other")
    dynamodb.answers = {"get_item": [{"Item": {"queueUrl": {"S": "https://q"}}}, {}, {"Item": {}}]}
    assert table.node_queue_url("node-a") == "https://q"
    assert dynamodb.calls[0] == (
        "get_item",
        {
            "TableName": "Other",
            "Key": {"PK": {"S": "NODE#node-a"}, "SK": {"S": "#NODE"}},
            "ProjectionExpression": "queueUrl",
        },
    )
    assert table.node_queue_url("node-a") is None
    assert table.node_queue_url("node-a") is None


def test_a_delivery_is_recorded_on_the_termination_still_open_or_not_at_all(dynamodb):
    dynamodb.answers = {
        "update_item": [
            {},
            client_error("ConditionalCheckFailedException", "UpdateItem"),  # closed meanwhile
            client_error("ThrottlingException", "UpdateItem"),
        ]
    }
    table = TerminationTable(dynamodb, "Other")
    table.record_delivery(terminating(0), T0)
    assert dynamodb.calls[0] == (
        "update_item",
        {
            "TableName": "Other",
            "Key": {"PK": {"S": "NODE#node-a"}, "SK": {"S": "WL#vm-1"}},
            "UpdateExpression": "SET deliveries = if_not_exists(deliveries, :zero) + :one, "
            "lastDeliveredAt = :now",
            # Of the deadline it carried: not one a reclaim moved since the read.
            "ConditionExpression": "terminationId = :tid "
            "AND attribute_not_exists(terminationDeadlineChanges)",
            "ExpressionAttributeValues": {
                ":zero": {"N": "0"},
                ":one": {"N": "1"},
                ":now": {"S": "2026-11-30T12:00:00Z"},
                ":tid": {"S": "term-1"},
            },
        },
    )
    table.record_delivery(terminating(0), T0)
    with pytest.raises(ClientError):
        table.record_delivery(terminating(0), T0)


def test_a_failed_report_for_a_termination_closed_meanwhile_writes_nothing(dynamodb):
    report = TerminationReport(
        terminationId="term-1", nodeId="node-a", workloadId="vm-1", outcome="failed",
        reportedAt=T0,
    )  # fmt: skip
    dynamodb.answers = {
        "update_item": [
            client_error("ConditionalCheckFailedException", "UpdateItem"),
            client_error("ThrottlingException", "UpdateItem"),
        ]
    }
    table = TerminationTable(dynamodb)
    assert table.record_failed_report(report, T0) is None
    with pytest.raises(ClientError):
        table.record_failed_report(report, T0)


@pytest.mark.parametrize(
    ("failure", "result"),
    [
        (None, SendResult.ACCEPTED),
        (
            client_error("AWS.SimpleQueueService.NonExistentQueue", "SendMessage"),
            SendResult.NO_QUEUE,
        ),
        (client_error("QueueDoesNotExist", "SendMessage"), SendResult.NO_QUEUE),
        (client_error("AccessDenied", "SendMessage"), SendResult.FAILED),
        (client_error(None, "SendMessage"), SendResult.FAILED),
        (down(), SendResult.FAILED),
    ],
)
def test_one_send_says_whether_sqs_took_it_or_the_queue_is_gone(failure, result):
    sqs = Recorder(send_message=[failure or {"MessageId": "m-1"}])
    assert queues.send_termination("q", message(1), "t-1#r2", sqs) is result
    assert sqs.calls == [
        (
            "send_message",
            {
                "QueueUrl": "q",
                "MessageBody": message(1).to_json(),
                "MessageGroupId": "vm-1",
                "MessageDeduplicationId": "t-1#r2",
            },
        )
    ]


# --- the node table's reads for the history mover and for writes on ended reservations ---


def test_the_mover_lists_reservations_past_their_end_from_the_sparse_index(dynamodb):
    ended = replace(RES_1, ends_at=T0 - timedelta(hours=1))
    dynamodb.answers = {"query": [{"Items": [to_attributes(reservation_item(ended))]}]}
    assert list(NodeTable().due_moves(T0)) == [ended]
    assert dynamodb.calls == [
        (
            "query",
            {
                "TableName": TABLE,
                "IndexName": "LiveReservationEnds",
                "KeyConditionExpression": "liveEnds = :live AND endsAt <= :now",
                "ExpressionAttributeValues": {
                    ":live": {"S": "live"},
                    ":now": {"S": "2026-11-30T12:00:00Z"},
                },
            },
        )
    ]


def test_an_ended_reservation_reads_from_the_nodes_history_and_an_unknown_one_is_none(dynamodb):
    kept = to_attributes(reservation_history_item(RES_1, T0 + timedelta(days=400)))
    dynamodb.answers = {"get_item": [{"Item": kept}, {}]}
    retained = replace(RES_1, retained_until=T0 + timedelta(days=400))
    assert NodeTable().load_ended("node-a", "res-1") == retained
    assert NodeTable().load_ended("node-a", "res-9") is None
    assert dynamodb.calls[0][1]["Key"] == to_attributes(reservation_history_key("node-a", "res-1"))
    assert dynamodb.calls[0][1]["ConsistentRead"] is True


def test_a_key_id_marker_names_its_key_id():
    assert keyid_key("key-owner-1") == {"PK": "KEYID#key-owner-1", "SK": "KEYID"}
    assert key_id_of(keyid_key("key-owner-1")["PK"]) == "key-owner-1"


def test_a_reservation_reads_live_before_its_history_and_unknown_as_none(dynamodb):
    node_attributes = to_attributes(node_item(NODE_A))
    live = to_attributes(reservation_item(RES_1))
    moved = replace(RES_1, reason="as moved")
    history = to_attributes(reservation_history_item(moved, T0 + timedelta(days=400)))
    dynamodb.answers = {
        "batch_get_item": [
            {"Responses": {TABLE: [history, live, node_attributes]}},  # caught mid-move: both
            {"Responses": {TABLE: [history, node_attributes]}},
            {"Responses": {TABLE: []}},
        ]
    }
    table = NodeTable()
    assert table.load_reservation("node-a", "res-1") == (NODE_A, RES_1)
    node, ended = table.load_reservation("node-a", "res-1")
    assert (node, ended.reason if ended else None) == (NODE_A, "as moved")
    assert table.load_reservation("node-b", "res-1") == (None, None)


def test_reservations_by_id_are_read_50_at_a_time_live_first_and_the_missing_again(dynamodb):
    """52 ids (one asked twice): two BatchGetItems (100 keys, then 4). res-03 caught
    mid-move (both items: the live one), res-07 caught in neither (the move's transaction
    seen half-way, item by item): read once more, with res-99, which is nowhere."""
    ids = [f"res-{i:02d}" for i in range(51)]

    def live(reservation_id: str) -> dict[str, Any]:
        return to_attributes(reservation_item(replace(RES_1, id=reservation_id)))

    def moved(reservation_id: str) -> dict[str, Any]:
        ended = replace(RES_1, id=reservation_id, reason="as moved")
        return to_attributes(reservation_history_item(ended, T0 + timedelta(days=400)))

    first = [live(i) for i in ids[:50] if i != "res-07"] + [moved("res-03")]
    dynamodb.answers = {
        "batch_get_item": [
            {"Responses": {TABLE: list(reversed(first))}},
            {"Responses": {TABLE: [live("res-50")]}},
            {"Responses": {TABLE: [moved("res-07")]}},  # res-99 still nowhere
        ]
    }
    found = NodeTable().load_reservations("node-a", [*reversed(ids), "res-99", "res-03"])
    assert [r.id for r in found] == ids
    assert (found[3].reason, found[3].retained_until) == (RES_1.reason, None)  # the live one
    assert (found[7].reason, found[7].retained_until) == ("as moved", T0 + timedelta(days=400))
    asked = [call[1]["RequestItems"][TABLE]["Keys"] for call in dynamodb.calls]
    assert [len(keys) for keys in asked] == [100, 4, 4]
    assert asked[2] == [
        to_attributes(key)
        for i in ("res-07", "res-99")
        for key in (reservation_key("node-a", i), reservation_history_key("node-a", i))
    ]
    assert all(call[1]["RequestItems"][TABLE]["ConsistentRead"] for call in dynamodb.calls)


def test_a_termination_is_read_again_consistently(dynamodb):
    dynamodb.answers = {"get_item": [{}]}
    assert TerminationTable(dynamodb, "Other").read("node-a", "vm-1") is None
    assert dynamodb.calls == [
        (
            "get_item",
            {
                "TableName": "Other",
                "Key": {"PK": {"S": "NODE#node-a"}, "SK": {"S": "WL#vm-1"}},
                "ConsistentRead": True,
            },
        )
    ]


def test_the_platform_record_sits_at_its_own_key():
    assert platform_key() == {"PK": "PLATFORM", "SK": "PLATFORM"}


# --- the queues ---------------------------------------------------------------------------


def message(n: int) -> SpotTermination:
    return SpotTermination(
        terminationId=f"t-{n}",
        nodeId="node-a",
        workloadId=f"vm-{n}",
        workloadKind="vm",
        unitIds=["0000:06:00.0"],
        reservationId="res-2",
        requestedAt=T0,
    )


def entries(batch: list[SpotTermination], dedup: dict[str, str]) -> list[dict[str, str]]:
    return [
        {
            "Id": str(i),
            "MessageBody": m.to_json(),
            "MessageGroupId": m.workload_id,
            "MessageDeduplicationId": dedup.get(m.termination_id, m.termination_id),
        }
        for i, m in enumerate(batch)
    ]


@pytest.fixture
def sqs(monkeypatch: pytest.MonkeyPatch) -> Any:
    recorder = Recorder()
    monkeypatch.setattr(clients, "sqs", lambda: recorder)
    return recorder


def test_failed_entries_are_sent_again_three_times_in_all(sqs):
    batch = [message(n) for n in range(3)]
    sqs.answers = {
        "send_message_batch": [
            {"Successful": [{"Id": "1"}], "Failed": [{"Id": "0"}, {"Id": "2"}]},
            {"Successful": [{"Id": "1"}]},  # now t-2 (t-0 failed again)
            {},
        ]
    }
    sent = queues.send_terminations("q", batch, {"t-0": "t-0#r1"})
    dedup = {"t-0": "t-0#r1"}
    assert [call for _, call in sqs.calls] == [
        {"QueueUrl": "q", "Entries": entries(batch, dedup)},
        {"QueueUrl": "q", "Entries": entries([batch[0], batch[2]], dedup)},
        {"QueueUrl": "q", "Entries": entries([batch[0]], dedup)},
    ]
    assert sent == {"t-1", "t-2"}


def test_a_batch_all_sent_is_not_sent_again_and_the_next_batch_follows(sqs):
    batch = [message(n) for n in range(12)]
    sqs.answers = {
        "send_message_batch": [
            {"Successful": [{"Id": str(i)} for i in range(10)]},
            {"Successful": [{"Id": "0"}, {"Id": "1"}]},
        ]
    }
    assert queues.send_terminations("q", batch) == {f"t-{n}" for n in range(12)}
    assert [call["Entries"] for _, call in sqs.calls] == [
        entries(batch[:10], {}),
        entries(batch[10:], {}),
    ]


@pytest.mark.parametrize("failure", [down(), client_error("AccessDenied", "SendMessageBatch")])
def test_sqs_not_answering_stops_the_sends_with_what_went_out(sqs, failure):
    batch = [message(n) for n in range(12)]
    sqs.answers = {"send_message_batch": [{"Successful": [{"Id": "3"}]}, failure]}
    assert queues.send_terminations("q", batch) == {"t-3"}
    assert len(sqs.calls) == 2  # the first batch's retry failed: the second is never tried


def test_a_nodes_queue_is_created_fifo_deduplicated_by_id_and_redriven_after_five_receives():
    sqs = Recorder(create_queue=[{"QueueUrl": "https://sqs.local/q/p-node-a.fifo"}])
    url = node_queue.ensure_node_queue(sqs, "p-", "node-a", "arn:aws:sqs:us-east-1:1:dlq.fifo")
    assert url == "https://sqs.local/q/p-node-a.fifo"
    redrive = {"deadLetterTargetArn": "arn:aws:sqs:us-east-1:1:dlq.fifo", "maxReceiveCount": "5"}
    assert sqs.calls == [
        (
            "create_queue",
            {
                "QueueName": "p-node-a.fifo",
                "Attributes": {
                    "FifoQueue": "true",
                    "ContentBasedDeduplication": "false",
                    "VisibilityTimeout": "60",
                    "MessageRetentionPeriod": "345600",  # four days
                    "ReceiveMessageWaitTimeSeconds": "20",
                    "RedrivePolicy": json.dumps(redrive),
                },
            },
        )
    ]


# --- a release's write --------------------------------------------------------------------


def change(**fields: Any) -> ReservationChange:
    defaults: dict[str, Any] = {
        "write_id": "w-1",
        "action": "release",
        "node_id": "node-a",
        "reservation": ItemVersion("res-1", 4),
        "topology": TopologyRead("node-a", 7),
        "released_after": None,
        "status_after": None,
        "reason": None,
        "caller_org_id": "org-broker",
        "caller_key_id": "key-1",
        "unit_ids": (),
        "released_before": (),
        "status_before": ReservationStatus.ACTIVE,
        "at": T0,
    }
    return ReservationChange(**{**defaults, **fields})


RES_KEY = {"PK": {"S": "NODE#node-a"}, "SK": {"S": "RES#res-1"}}


def test_a_change_that_writes_nothing_checks_the_reservations_version_only():
    check, _topology = change_actions(change())
    assert check == {
        "ConditionCheck": {
            "TableName": TABLE,
            "Key": RES_KEY,
            "ConditionExpression": "version = :v",
            "ExpressionAttributeValues": {":v": {"N": "4"}},
        }
    }


def test_a_release_writes_the_units_released_at_the_version_read():
    update, _topology = change_actions(change(released_after=("u-1", "u-2")))
    assert update == {
        "Update": {
            "TableName": TABLE,
            "Key": RES_KEY,
            "UpdateExpression": "SET updatedAt = :now, version = version + :one, "
            "releasedUnitIds = :released",
            "ConditionExpression": "version = :v",
            "ExpressionAttributeValues": {
                ":now": {"S": "2026-11-30T12:00:00Z"},
                ":one": {"N": "1"},
                ":released": {"L": [{"S": "u-1"}, {"S": "u-2"}]},
                ":v": {"N": "4"},
            },
        }
    }


# --- a cancel's write: the list access the ended reservation leaves ------------------------


def cancel(
    named_until: dict[str, datetime], deciding: tuple[ItemVersion, ...], node_version: int | None
) -> ReservationChange:
    ended = replace(RES_1, status=ReservationStatus.CANCELLED, updated_at=T0, version=5)
    return change(
        ended=ended, named_until=named_until, named_deciding=deciding, node_version=node_version
    )


def test_a_cancel_brings_the_orgs_it_names_forward_under_the_nodes_version_read():
    kept_until = T0 + timedelta(days=400)
    named = {"org-lab": kept_until, "org-broker": kept_until}
    *_, node, access = change_actions(cancel(named, (), node_version=9))
    assert node == {
        "ConditionCheck": {
            "TableName": TABLE,
            "Key": {"PK": {"S": "NODE#node-a"}, "SK": {"S": "#NODE"}},
            "ConditionExpression": "version = :v",
            "ExpressionAttributeValues": {":v": {"N": "9"}},
        }
    }
    kept = str(int(kept_until.timestamp()))  # as the change carries it, in epoch seconds
    assert access == {
        "Update": {
            "TableName": TABLE,
            "Key": {"PK": {"S": "NODE#node-a"}, "SK": {"S": "~ACCESS"}},
            "UpdateExpression": "SET version = if_not_exists(version, :zero) + :one, "
            "#n0 = :n0, #n1 = :n1",
            "ExpressionAttributeNames": {
                "#n0": "namedUntil:org-broker",
                "#n1": "namedUntil:org-lab",
            },
            "ExpressionAttributeValues": {
                ":n0": {"N": kept},
                ":n1": {"N": kept},
                ":zero": {"N": "0"},
                ":one": {"N": "1"},
            },
        }
    }


def test_a_cancel_whose_orgs_another_reservation_names_longer_checks_it_and_the_topology():
    *_, topology, other = change_actions(cancel({}, (ItemVersion("res-2", 3),), node_version=9))
    assert topology == {
        "ConditionCheck": {
            "TableName": TABLE,
            "Key": {"PK": {"S": "NODE#node-a"}, "SK": {"S": "#NODE"}},
            "ConditionExpression": "topologyGen = :gen",
            "ExpressionAttributeValues": {":gen": {"N": "7"}},
        }
    }
    assert other["ConditionCheck"]["Key"] == {"PK": {"S": "NODE#node-a"}, "SK": {"S": "RES#res-2"}}
    assert other["ConditionCheck"]["ExpressionAttributeValues"] == {":v": {"N": "3"}}
    # The node's version unread: the topology, never an update of the list access.
    *_, last = change_actions(cancel({"org-lab": T0}, (), node_version=None))
    assert last["ConditionCheck"]["ConditionExpression"] == "topologyGen = :gen"


# --- the plain reads ----------------------------------------------------------------------


def test_a_query_reads_every_page_each_from_where_the_last_stopped(dynamodb):
    last = {"PK": {"S": "NODE#node-a"}, "SK": {"S": "RES#res-1"}}
    dynamodb.answers = {
        "query": [
            {"Items": [{"id": {"S": "res-1"}}], "LastEvaluatedKey": last},
            {"Items": [{"id": {"S": "res-2"}}]},
        ]
    }
    query = node_queries.up_to_access("node-a", "RES#")
    assert list(queries.query_items(query)) == [{"id": "res-1"}, {"id": "res-2"}]
    assert dynamodb.calls == [("query", query), ("query", {**query, "ExclusiveStartKey": last})]


def test_the_partition_up_to_its_access_item_is_one_consistent_range():
    assert node_queries.up_to_access("node-a", "RES#") == {
        "TableName": TABLE,
        "KeyConditionExpression": "PK = :pk AND SK BETWEEN :first AND :access",
        "ExpressionAttributeValues": {
            ":pk": {"S": "NODE#node-a"},
            ":first": {"S": "RES#"},
            ":access": {"S": "~ACCESS"},
        },
        "ConsistentRead": True,
    }


def test_a_batch_read_is_consistent_and_asks_again_for_the_keys_left_unprocessed(dynamodb):
    keys = [{"PK": "NODE#node-a", "SK": f"RES#res-{n}"} for n in (1, 2)]
    left = {TABLE: {"Keys": [to_attributes(keys[1])], "ConsistentRead": True}}
    dynamodb.answers = {
        "batch_get_item": [
            {"Responses": {}, "UnprocessedKeys": left},  # throttled: nothing read yet
            {"Responses": {TABLE: [to_attributes(keys[1])]}, "UnprocessedKeys": {}},
        ]
    }
    assert queries.batch_get(keys) == [keys[1]]  # res-1 does not exist
    assert dynamodb.calls == [
        (
            "batch_get_item",
            {
                "RequestItems": {
                    TABLE: {"Keys": [to_attributes(k) for k in keys], "ConsistentRead": True}
                }
            },
        ),
        ("batch_get_item", {"RequestItems": left}),
    ]


# --- a transaction's cancellation ---------------------------------------------------------


def cancelled(message: str, *reasons: dict[str, Any]) -> ClientError:
    response: dict[str, Any] = {
        "Error": {"Code": "TransactionCanceledException", "Message": message}
    }
    if reasons:
        response["CancellationReasons"] = list(reasons)
    return ClientError(response, "TransactWriteItems")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("reasons", "detail"),
    [
        # One reason per action: an action that did not fail has Code None, or no code.
        (({"Code": "None"}, {}, {"Code": "ConditionalCheckFailed"}), "ConditionalCheckFailed"),
        (
            ({"Code": "TransactionConflict"}, {"Code": "ConditionalCheckFailed"}),
            "ConditionalCheckFailed, TransactionConflict",
        ),
    ],
)
def test_a_transaction_lost_to_another_writer_is_a_conflict_naming_its_reasons(
    dynamodb, reasons, detail
):
    dynamodb.answers = {"transact_write_items": [cancelled("cancelled", *reasons)]}
    with pytest.raises(WriteConflict) as conflict:
        transactions.run([{"Put": {}}, {"Put": {}}, {"Put": {}}])
    assert (str(conflict.value), conflict.value.stored) == (detail, None)


def test_a_cancellation_without_reasons_is_a_conflict_only_when_it_says_transaction_conflict(
    dynamodb,
):
    dynamodb.answers = {
        "transact_write_items": [
            cancelled("Transaction cancelled [TransactionConflict]"),
            cancelled("Transaction cancelled [ValidationError]"),
        ]
    }
    with pytest.raises(WriteConflict) as conflict:
        transactions.run([{"Put": {}}])
    assert str(conflict.value) == "unknown"
    with pytest.raises(ClientError):
        transactions.run([{"Put": {}}])


def test_a_transaction_cancelled_by_a_kept_answer_carries_that_answer(dynamodb):
    answer = AnswerRecord(
        IdempotentRequest("scope-1", "hash-1"), Outcome(201, "{}"), T0, T0 + timedelta(hours=24)
    )
    kept = {
        "Code": "ConditionalCheckFailed",
        "Item": to_attributes(idempotency_item(answer)),
    }
    dynamodb.answers = {"transact_write_items": [cancelled("cancelled", {"Code": "None"}, kept)]}
    with pytest.raises(WriteConflict) as conflict:
        transactions.run([{"Put": {}}, {"Put": {}}], "write-1", 1)
    assert conflict.value.stored is not None
    assert (conflict.value.stored.request_hash, conflict.value.stored.outcome) == (
        "hash-1",
        Outcome(201, "{}"),
    )
    assert dynamodb.calls[0][1]["ClientRequestToken"] == "write-1"


# --- the node table's partition and list reads ----------------------------------------------


def test_a_node_is_read_consistently_up_to_its_list_access_item(dynamodb):
    dynamodb.answers = {"query": [{"Items": [to_attributes(node_item(NODE_A))]}]}
    snapshot = NodeTable().load_node("node-a")
    assert snapshot is not None
    assert snapshot.node == NODE_A
    assert dynamodb.calls == [
        (
            "query",
            {
                "TableName": TABLE,
                "KeyConditionExpression": "PK = :pk AND SK < :access",
                "ExpressionAttributeValues": {
                    ":pk": {"S": "NODE#node-a"},
                    ":access": {"S": "~ACCESS"},
                },
                "ConsistentRead": True,
            },
        )
    ]


ACCESS = ListAccess("org-acme", workload_org_ids=frozenset({"org-spot"}))


def test_a_list_page_reads_the_partition_after_the_cursor_with_its_access_item(dynamodb):
    page = [to_attributes(reservation_item(RES_1)), to_attributes(access_item("node-a", ACCESS))]
    dynamodb.answers = {"query": [{"Items": page}, {"Items": page}]}
    read = NodeTable().reservation_page("node-a", "res-0")
    assert (read.access, read.reservations, read.more) == (ACCESS, (RES_1,), False)
    NodeTable().reservation_page("node-a", None)
    first = node_queries.up_to_access("node-a", "RES#")
    assert dynamodb.calls == [  # no GetItem: the page holds the access item
        (
            "query",
            {**first, "ExclusiveStartKey": to_attributes(reservation_key("node-a", "res-0"))},
        ),
        ("query", first),
    ]


def test_a_list_page_stopped_before_the_access_item_reads_it_with_one_get_and_says_more(
    dynamodb,
):
    stopped = {"LastEvaluatedKey": {"PK": {"S": "NODE#node-a"}, "SK": {"S": "RES#res-1"}}}
    dynamodb.answers = {
        "query": [{"Items": [to_attributes(reservation_item(RES_1))], **stopped}],
        "get_item": [{"Item": to_attributes(access_item("node-a", ACCESS))}],
    }
    read = NodeTable().reservation_page("node-a", None)
    assert (read.access, read.reservations, read.more) == (ACCESS, (RES_1,), True)
    assert dynamodb.calls[1] == (
        "get_item",
        {
            "TableName": TABLE,
            "Key": {"PK": {"S": "NODE#node-a"}, "SK": {"S": "~ACCESS"}},
            "ConsistentRead": True,
        },
    )


def test_a_list_page_stopped_on_its_access_item_says_no_more_and_reads_nothing_else(dynamodb):
    page = [to_attributes(reservation_item(RES_1)), to_attributes(access_item("node-a", ACCESS))]
    stopped = {"LastEvaluatedKey": {"PK": {"S": "NODE#node-a"}, "SK": {"S": "~ACCESS"}}}
    dynamodb.answers = {"query": [{"Items": page, **stopped}]}
    read = NodeTable().reservation_page("node-a", None)
    assert (read.access, read.reservations, read.more) == (ACCESS, (RES_1,), False)
    assert [operation for operation, _ in dynamodb.calls] == ["query"]


@pytest.mark.parametrize(("limit", "read"), [((), 101), ((20,), 101), ((150,), 151)])
def test_a_list_page_with_history_reads_a_window_of_the_list_index(dynamodb, limit, read):
    dynamodb.answers = {"query": [{"Items": []}]}
    NodeTable().reservation_page("node-a", "res-0", True, *limit)
    assert dynamodb.calls[0][1] == {
        "TableName": TABLE,
        "IndexName": "NodeReservations",
        "KeyConditionExpression": "listPK = :pk AND SK BETWEEN :first AND :access",
        "ExpressionAttributeValues": {
            ":pk": {"S": "NODE#node-a"},
            ":first": {"S": "RES#res-0!"},
            ":access": {"S": "~ACCESS"},
        },
        "Limit": read,
    }


def test_a_history_page_caught_mid_move_shows_the_live_item_and_its_own_access(dynamodb):
    moved = to_attributes(reservation_history_item(replace(RES_1, reason="as moved"), T0))
    live = to_attributes(reservation_item(RES_1))
    access = to_attributes(access_item("node-a", ACCESS))
    stopped = {"LastEvaluatedKey": {"PK": {"S": "NODE#node-a"}, "SK": {"S": "~ACCESS"}}}
    dynamodb.answers = {
        "query": [
            {"Items": [live, moved, access], **stopped},
            {"Items": [moved, live, access], **stopped},
        ]
    }
    for _ in range(2):
        read = NodeTable().reservation_page("node-a", None, True)
        assert (read.access, read.reservations, read.more) == (ACCESS, (RES_1,), False)
    assert [operation for operation, _ in dynamodb.calls] == ["query", "query"]  # no GetItem


# --- each write's own actions: the conditions it rests on, the versions it moves ------------


def unit_attributes(unit_id: str) -> dict[str, Any]:
    return {"PK": {"S": "NODE#node-a"}, "SK": {"S": f"UNIT#{unit_id}"}}


def test_a_placement_counts_on_the_node_claims_each_unit_unclaimed_and_names_its_org():
    workload = replace(VM_1, id="vm-9", org_id="org-spot")
    placement = PlacementWrite(
        "wr-1", ItemVersion("node-a", 3), workload, (ItemVersion("u-1", 2),), (),
        "org-platform", "key-sched", T0,
    )  # fmt: skip
    node, claim, workload_put, org = placement_actions(placement)
    assert node["Update"]["UpdateExpression"] == "ADD placements :one"
    assert node["Update"]["ExpressionAttributeValues"] == {":v": {"N": "3"}, ":one": {"N": "1"}}
    assert claim["Update"] == {
        "TableName": TABLE,
        "Key": unit_attributes("u-1"),
        "UpdateExpression": "SET claimedBy = :claim, version = version + :one",
        "ConditionExpression": "version = :v AND attribute_not_exists(claimedBy) "
        "AND attribute_not_exists(heldFor)",
        "ExpressionAttributeValues": {
            ":claim": {"S": "vm:vm-9"},
            ":v": {"N": "2"},
            ":one": {"N": "1"},
        },
    }
    assert workload_put["Put"]["ConditionExpression"] == "attribute_not_exists(PK)"
    assert org["Update"] == {
        "TableName": TABLE,
        "Key": {"PK": {"S": "NODE#node-a"}, "SK": {"S": "~ACCESS"}},
        "UpdateExpression": "SET version = if_not_exists(version, :zero) + :one "
        "ADD workloadOrgIds :org",
        "ExpressionAttributeValues": {
            ":org": {"SS": ["org-spot"]},
            ":zero": {"N": "0"},
            ":one": {"N": "1"},
        },
    }


def test_an_ended_workload_frees_each_unit_it_held_at_the_version_read():
    """... and records when (a lending policy counts the unit's idle time from it)."""
    end = WorkloadEnd(
        "wr-2", "node-a", VM_1, (ItemVersion("u-1", 4),), "org-platform", "key-sched", T0
    )
    *_, free = workload_end_actions(end)
    assert free["Update"] == {
        "TableName": TABLE,
        "Key": unit_attributes("u-1"),
        "UpdateExpression": "REMOVE claimedBy, heldFor SET freedAt = :at, version = version + :one",
        "ConditionExpression": "version = :v",
        "ExpressionAttributeValues": {
            ":v": {"N": "4"},
            ":one": {"N": "1"},
            ":at": {"S": format_event_time(T0)},
        },
    }


def test_a_create_moves_the_nodes_version_by_one_and_makes_or_bumps_its_list_access():
    create = ReservationCreate(
        RES_1, ItemVersion("node-a", 3), (), "org-acme", "key-7", RES_1.created_at, "org-acme"
    )
    bump, access, _reservation = create_actions(create)
    assert bump["Update"] == {
        "TableName": TABLE,
        "Key": {"PK": {"S": "NODE#node-a"}, "SK": {"S": "#NODE"}},
        "UpdateExpression": "SET version = version + :one",
        "ConditionExpression": "version = :v",
        "ExpressionAttributeValues": {":one": {"N": "1"}, ":v": {"N": "3"}},
    }
    values = access["Update"]["ExpressionAttributeValues"]
    assert (values[":zero"], values[":one"]) == ({"N": "0"}, {"N": "1"})
    assert "version = if_not_exists(version, :zero) + :one" in access["Update"]["UpdateExpression"]


def test_a_reaffirm_without_a_generation_sets_none_and_moves_the_version_by_one():
    write = ReaffirmWrite(
        "wr-r", "node-a", ItemVersion("res-1", 5), ItemVersion("node-a", 3),
        ReservationStatus.ACTIVE, None, None, "org-platform", "key-nodes", T0,
    )  # fmt: skip
    update, _node = reaffirm_actions(write)
    assert update["Update"]["UpdateExpression"] == (
        "SET #status = :status, releasedUnitIds = :none, updatedAt = :now, version = version + :one"
    )
    assert update["Update"]["ExpressionAttributeValues"] == {
        ":status": {"S": "active"},
        ":none": {"L": []},
        ":now": {"S": "2026-11-30T12:00:00Z"},
        ":one": {"N": "1"},
        ":v": {"N": "5"},
    }


def node_put(leftovers: int) -> NodePut:
    return NodePut(
        "wr-n", replace(NODE_A, queue_url=None), 3, 2, (), (),
        tuple(ItemVersion(f"u-{n}", 1) for n in range(leftovers)), (), 0,
        "org-platform", "key-nodes", T0,
    )  # fmt: skip


def test_a_node_update_sets_its_times_and_moves_its_and_its_access_items_versions_by_one():
    node, access, *deletes = node_put_actions(node_put(30), 10)
    assert len(deletes) == 8  # the rest of the room the caller gives
    update = node["Update"]
    assert update["UpdateExpression"] == (
        "SET ownerOrgId = :owner, topologyGen = :gen, unitsChangedAtGen = :units, "
        "updatedAt = :now, createdAt = if_not_exists(createdAt, :now), version = version + :one"
    )
    assert update["ExpressionAttributeValues"][":one"] == {"N": "1"}
    values = access["Update"]["ExpressionAttributeValues"]
    assert (values[":zero"], values[":one"]) == ({"N": "0"}, {"N": "1"})


def test_each_unit_a_node_update_puts_is_conditioned_on_the_unit_as_read():
    new, kept = Unit("0000:04:00.0", "a", "m", 1, True), Unit("0000:05:00.0", "a", "m", 1, True)
    write = replace(node_put(0), units=(UnitPut(new, None), UnitPut(kept, 4)))
    _node, _access, *puts = node_put_actions(write, 10)
    assert [action["Put"]["Item"]["SK"]["S"] for action in puts] == [
        "UNIT#0000:04:00.0",
        "UNIT#0000:05:00.0",
    ]
    conditions = [
        (action["Put"]["ConditionExpression"], action["Put"].get("ExpressionAttributeValues"))
        for action in puts
    ]
    assert conditions == [("attribute_not_exists(PK)", None), ("version = :v", {":v": {"N": "4"}})]


def test_a_put_over_an_item_read_is_conditioned_on_its_version():
    assert put({"PK": "X", "SK": "Y"}, 7)["Put"] == {
        "TableName": TABLE,
        "Item": {"PK": {"S": "X"}, "SK": {"S": "Y"}},
        "ConditionExpression": "version = :v",
        "ExpressionAttributeValues": {":v": {"N": "7"}},
    }


def test_a_new_item_is_put_only_where_there_is_none_and_a_topology_never_set_is_checked_absent():
    assert put({"PK": "X", "SK": "Y"})["Put"]["ConditionExpression"] == "attribute_not_exists(PK)"
    check = topology_check(TopologyRead("node-a", None))["ConditionCheck"]
    assert check == {
        "TableName": TABLE,
        "Key": {"PK": {"S": "NODE#node-a"}, "SK": {"S": "#NODE"}},
        "ConditionExpression": "attribute_not_exists(topologyGen)",
    }


def test_ten_large_events_go_on_the_bus_in_requests_under_its_256_kb(bus):
    """Ten PATCHes each replacing 50 audience and 50 manager orgs of 128 characters: each
    event is about 26 KB, ten are more than a PutEvents request takes (256 KB in all)."""
    orgs = [[f"org-{side}-{n:02}-" + "x" * 118 for n in range(50)] for side in "abcd"]
    changes = {"allowedOrgIds": {"from": orgs[0], "to": orgs[1]},
               "managingOrgIds": {"from": orgs[2], "to": orgs[3]}}  # fmt: skip
    base = every_type()[0]
    large = [
        replace(base, event=replace(base.event, id=f"evt-{n}", data={"changes": changes}))
        for n in range(10)
    ]
    sizes = [event_outlets._entry_size(stored) for stored in large]
    assert sum(sizes) > 256 * 1024 > max(sizes)
    accepted = [{"Entries": [{"EventId": f"e-{n}"} for n in range(10)]}] * 2
    bus.answers = {"put_events": accepted}
    assert event_outlets.EventBus().deliver(large) == set()
    sent = [request["Entries"] for _, request in bus.calls]
    assert len(sent) == 2
    assert [e["Detail"] for batch in sent for e in batch] == [s.event.to_json() for s in large]
    for batch in sent:
        size = sum(14 + len((e["Source"] + e["DetailType"] + e["Detail"]).encode()) for e in batch)
        assert size <= 256 * 1024


def test_a_batch_is_cut_by_count_and_by_bytes_and_a_value_too_large_goes_alone():
    cut = list(sized_batches([5, 5, 5, 300, 1, 1, 1, 1], int, count=3, max_bytes=12))
    assert cut == [[5, 5], [5], [300], [1, 1, 1], [1]]
    assert list(sized_batches([], int, count=3)) == []
