"""Events in the table: the node feeds, the org feeds, and the relay's marks.

- A node's feed: ``NODEEVT#<node>``, sort key the item's position (``kernel.event_log``: when it
  was recorded, to the ms, then the event id), so the feed is in record order and a page's
  position is a key condition. Never in the node partition (``NODE#<node>``): the node's
  present must not grow with its past.
- An org's feed: ``ORGEVT#<org>``, positioned when the relay wrote it. The operator's feed,
  every event of every node, is ``ORGEVT#/platform`` ("/" is in no org id). A feed may be
  split into shards (``settings().feed_shards``): shard 0 is that partition, shard k is
  ``<partition>#<k>``; an event goes to the shard of its node
  (``events.table.keys.feed_shard``), and a page of the feed reads one Query per shard
  (``events.feeds``).
- Every feed write is positioned by :func:`record_clock` just before it is sent; one that
  was answered a settle window or more after its position is written again at a newer
  position with the same event (``kernel.event_log``): a feed may hold an event twice, readers
  deduplicate by id.
- A node feed item is born with ``unrelayed`` (the sparse ``UnrelayedEvents`` index, sorted
  by the same sort key; its value, the mark, is one of ``RELAY_MARK_SHARDS`` by the node, so
  no one index partition takes every event) and ``relayedTo``, the outlets it reached so
  far; it leaves the index once it reached every outlet. Org feed items and rewritten
  copies never carry it.
- Every event item expires (``expiresAtEpoch``, the table's TTL) ``HistoryRetentionDays``
  after the event; readers treat an item past it as gone before the TTL deletes it.

The write that makes a change puts its events with :func:`event_put` in its own transaction
(then :func:`rewrite_late`); :func:`put_event` writes one on its own (tests, tools).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from reservations.events.models import EventsRead, NodeFeedAccess, PendingEvent, UnreadableEvent
from reservations.events.rules.visibility import feed_org_ids
from reservations.events.table.keys import (
    PLATFORM_FEED,
    event_key,
    feed_shard,
    feed_shard_pk,
    org_events_pk,
)
from reservations.kernel.aws import clients
from reservations.kernel.aws.actions import MAX_ACTIONS, Action
from reservations.kernel.aws.codec import Item, from_attributes, to_attributes
from reservations.kernel.aws.event_items import (
    REVIEW,
    UNRELAYED,
    VIEWS,
    event_put,
    feed_item_of,
    relay_marks,
    rewrite_late,
)
from reservations.kernel.aws.queries import batch_get
from reservations.kernel.envelope import CloudEvent, StoredEvent, views_from_json
from reservations.kernel.event_log import just_after
from reservations.kernel.settings import settings
from reservations.nodes import (
    NODE_EVENTS_PREFIX,
    RESERVATION_PREFIX,
    ReviewScope,
    access_key,
    named_from_item,
    node_events_pk,
    node_pk,
)

UNRELAYED_INDEX = "UnrelayedEvents"
# How far the relay got deriving a node update's reviews: the last reservation's sort key.
REVIEWED_AFTER = "reviewedAfter"
# Derived events written in one transaction: TransactWriteItems takes 100 actions, and the
# last is the progress they make (:func:`progress_update`).
DERIVED_BATCH = MAX_ACTIONS - 1


@dataclass(frozen=True, slots=True)
class ReviewProgress:
    """A step of a node update's review derivation: its reviews written from past the
    reservation ``read`` (None: from the first), the value the relay read, through the
    reservation ``through``."""

    stored: StoredEvent
    read: str | None
    through: str


def put_derived(
    derived: Sequence[StoredEvent], retention_days: int, progress: ReviewProgress | None = None
) -> set[str]:
    """Derived events into the node's feed, positioned when they are written (and again if
    that took the window: :func:`rewrite_late`), in one transaction with the ``progress``
    they make: they land with it or not at all, so a relay never writes them again from a
    progress that missed them. The ids DynamoDB did not take, or whose copy did not land in
    time (the event they derive from stays owing; its next relay goes on from the
    progress). The SDK's own retry of a transaction whose answer was lost goes with the
    same ``ClientRequestToken`` (botocore makes one a call), answered as the first; sent
    again any other way, its progress condition refuses it whole."""
    if len(derived) > DERIVED_BATCH:
        raise ValueError(f"{len(derived)} derived events: a transaction takes {DERIVED_BATCH}")
    puts = [
        event_put(stored, node_events_pk(stored.event.node_id), retention_days)
        for stored in derived
    ]
    recorded = [] if progress is None else [progress_update(progress)]
    try:
        clients.dynamodb().transact_write_items(TransactItems=[*puts, *recorded])
    except (BotoCoreError, ClientError):
        return {stored.id for stored in derived}
    return rewrite_late(puts)  # behind a reader's cursor: written again later


def progress_update(progress: ReviewProgress) -> Action:
    """The Update that records how far the update's reviews are written: only from the value
    the relay read (of two relays of the same update, the second to write a step is refused
    whole, its reviews with it), and never bringing back an item the TTL deleted."""
    names = {"#after": REVIEWED_AFTER}
    if progress.read is None:
        condition, values = "attribute_not_exists(#after)", {":after": progress.through}
    else:
        condition = "#after = :read"
        values = {":after": progress.through, ":read": progress.read}
    return {
        "Update": {
            **_event_key(progress.stored),
            "UpdateExpression": "SET #after = :after",
            "ConditionExpression": f"attribute_exists(PK) AND {condition}",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": to_attributes(values),
        }
    }


def node_reservations(node_id: str, after: str | None, count: int) -> tuple[list[Item], bool]:
    """Up to ``count`` of the node's reservation items (its partition: live ones and those
    not yet moved to its history) after sort key ``after``, in order; and whether more
    follow."""
    values = {":pk": node_pk(node_id), ":res": RESERVATION_PREFIX}
    query: dict[str, Any] = {
        "TableName": settings().table_name,
        "KeyConditionExpression": "PK = :pk AND begins_with(SK, :res)",
        "ExpressionAttributeValues": to_attributes(values),
        "ConsistentRead": True,
        "Limit": count,
    }
    if after is not None:
        query["ExclusiveStartKey"] = to_attributes({"PK": node_pk(node_id), "SK": after})
    page = clients.dynamodb().query(**query)
    return [from_attributes(i) for i in page["Items"]], "LastEvaluatedKey" in page


def _event_key(stored: StoredEvent) -> dict[str, Any]:
    key = event_key(node_events_pk(stored.event.node_id), str(stored.position))
    return {"TableName": settings().table_name, "Key": to_attributes(key)}


def reviewed_after(stored: StoredEvent) -> str | None:
    """Where the relay got deriving the update's reviews (None: not started, or gone)."""
    item = (
        clients.dynamodb()
        .get_item(**_event_key(stored), ConsistentRead=True, ProjectionExpression=REVIEWED_AFTER)
        .get("Item")
    )
    return str(from_attributes(item)[REVIEWED_AFTER]) if item else None


def record_reviewed_after(progress: ReviewProgress) -> bool:
    """Record a step that wrote no review (a page's reservations past its last review):
    on its own, as :func:`progress_update` says. False when refused: another relay of the
    update moved it, or the TTL deleted the item."""
    try:
        clients.dynamodb().update_item(**progress_update(progress)["Update"])
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
            raise
        return False
    return True


def stored_event_from_item(item: Item) -> StoredEvent:
    epoch = item.get("expiresAtEpoch")
    return StoredEvent(
        event=CloudEvent.from_json(item["event"]),
        owner_org_id=item["ownerOrgId"],
        audience_org_ids=frozenset(str(org) for org in item.get("audienceOrgIds") or ()),
        expires_at=datetime.fromtimestamp(int(epoch), UTC) if epoch is not None else None,
        review=ReviewScope.from_json(item[REVIEW]) if item.get(REVIEW) else None,
        position=str(item["SK"]),
        views=views_from_json(item.get(VIEWS)),
    )


def pending_event_from_item(item: Item) -> PendingEvent:
    """A node feed item as the relay takes it: the event and the outlets it reached."""
    reached = frozenset(str(outlet) for outlet in item.get("relayedTo") or ())
    return PendingEvent(stored_event_from_item(item), reached)


def pending_event_from_stream(record: Mapping[str, Any]) -> PendingEvent | None:
    """The new event a DynamoDB Stream record carries; None for any other record (the event
    source mapping's filter passes only these: an INSERT of a node feed item)."""
    change = record.get("dynamodb", {})
    partition = change.get("Keys", {}).get("PK", {}).get("S", "")
    if record.get("eventName") != "INSERT" or not partition.startswith(NODE_EVENTS_PREFIX):
        return None
    return pending_event_from_item(from_attributes(change["NewImage"]))


def feed_items(stored: StoredEvent, position: str) -> list[Item]:
    """The event's items in the org feeds at ``position``: the operator's, and each org's
    that may see it."""
    return [feed_item(stored, partition, position) for partition in feed_partitions(stored)]


def feed_item(stored: StoredEvent, partition: str, position: str) -> Item:
    """The event's item in one org feed (``partition``) at ``position``: the org's reduced
    view of it, where it has one."""
    viewer = next((org for org in stored.views if org_events_pk(org) == partition), None)
    expiry = stored.expires_at or datetime.max.replace(tzinfo=UTC)
    return feed_item_of(partition, stored, expiry, position, viewer)


def feed_partitions(stored: StoredEvent) -> list[str]:
    """The operator's feed, then the feed of each org that may see the event: in each, the
    shard the event's node goes to."""
    node_id = stored.event.node_id
    return [
        org_feed_pk(None, feed_shard(node_id, settings().feed_shards(None))),
        *(
            org_feed_pk(org, feed_shard(node_id, settings().feed_shards(org)))
            for org in sorted(feed_org_ids(stored))
        ),
    ]


def org_feed_pk(org_id: str | None, shard: int) -> str:
    """The partition of an org feed's shard (``org_id`` None: the operator's feed)."""
    return feed_shard_pk(PLATFORM_FEED if org_id is None else org_events_pk(org_id), shard)


# --- reads ------------------------------------------------------------------------------------


def feed_access(node_id: str) -> NodeFeedAccess | None:
    """Who may read the node's feed, from the node's list access item (one GetItem); None:
    no such node."""
    response = clients.dynamodb().get_item(
        TableName=settings().table_name,
        Key=to_attributes(access_key(node_id)),
        ConsistentRead=True,
    )
    item = response.get("Item")
    if not item:
        return None
    access = from_attributes(item)
    return NodeFeedAccess(
        owner_org_id=access["ownerOrgId"],
        named_until=named_from_item(access),
        workload_org_ids=frozenset(str(org) for org in access.get("workloadOrgIds") or ()),
    )


def read_feed(partition: str, after: str | None, before: str, count: int) -> EventsRead:
    """One Query: up to ``count`` events of the feed after position ``after`` and before
    ``before``, in record order (none, and no Query, when nothing lies between)."""
    condition = "PK = :pk AND SK < :before"
    values: dict[str, Any] = {":pk": partition, ":before": before}
    if after is not None:
        if just_after(after) >= before:
            return EventsRead(())
        condition = "PK = :pk AND SK BETWEEN :after AND :before"
        values[":after"] = just_after(after)  # BETWEEN is inclusive: just past ``after``
    page = clients.dynamodb().query(
        TableName=settings().table_name,
        KeyConditionExpression=condition,
        ExpressionAttributeValues=to_attributes(values),
        ConsistentRead=True,
        Limit=count,
    )
    events = tuple(stored_event_from_item(from_attributes(i)) for i in page["Items"])
    stopped_at = page.get("LastEvaluatedKey", {}).get("SK", {}).get("S")
    return EventsRead(events, stopped_at)


class EventTable:
    """The feeds behind the logic's reader port; clients are made on first use."""

    def feed_access(self, node_id: str) -> NodeFeedAccess | None:
        return feed_access(node_id)

    def node_events(self, node_id: str, after: str | None, before: str, count: int) -> EventsRead:
        return read_feed(node_events_pk(node_id), after, before, count)

    def feed_shards(self, org_id: str | None) -> int:
        return settings().feed_shards(org_id)

    def org_events(
        self, org_id: str | None, shard: int, after: str | None, before: str, count: int
    ) -> EventsRead:
        """``org_id`` None: the operator's feed."""
        return read_feed(org_feed_pk(org_id, shard), after, before, count)


# --- the relay's marks ------------------------------------------------------------------------


def _readable(item: Item) -> PendingEvent | UnreadableEvent:
    """The marked item as an event, or what is wrong with it (a bug that wrote it must not
    stop the relay of every event after it)."""
    try:
        return pending_event_from_item(item)
    except (KeyError, ValueError, TypeError) as error:
        return UnreadableEvent(f"{item.get('PK')} {item.get('SK')}", repr(error)[:200])


def _mark_key(stored: StoredEvent) -> tuple[str, str]:
    return node_events_pk(stored.event.node_id), str(stored.position)


class RelayMarks:
    """Which events still owe an outlet: the sparse index, and settling what they reached."""

    def unrelayed(self, before: str, page_size: int) -> Iterator[PendingEvent | UnreadableEvent]:
        """Every event still marked whose position is before ``before``, oldest first, from
        every mark's index partition, merged by position (the index is eventually
        consistent: one just settled may still show)."""
        marks = [self._marked(mark, before, page_size) for mark in relay_marks()]
        for _, readable in heapq.merge(*marks, key=lambda pair: pair[0]):
            yield readable

    @staticmethod
    def _marked(
        mark: str, before: str, page_size: int
    ) -> Iterator[tuple[str, PendingEvent | UnreadableEvent]]:
        """The events under one mark, oldest first, each with its position."""
        query: dict[str, Any] = {
            "TableName": settings().table_name,
            "IndexName": UNRELAYED_INDEX,
            "KeyConditionExpression": "#mark = :pending AND SK < :before",
            "ExpressionAttributeNames": {"#mark": UNRELAYED},
            "ExpressionAttributeValues": to_attributes({":pending": mark, ":before": before}),
            "Limit": page_size,
        }
        while True:
            page = clients.dynamodb().query(**query)
            for item in page["Items"]:
                plain = from_attributes(item)
                yield str(plain.get("SK", "")), _readable(plain)
            if "LastEvaluatedKey" not in page:
                return
            query["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def current(self, pending: Sequence[PendingEvent]) -> list[PendingEvent]:
        """The events as their marks stand now (one BatchGetItem, strongly consistent): one
        relayed everywhere since its stream record was made is left out (a stream batch
        handed over again delivers nothing twice), and so is a late write's copy (no mark:
        its first write is relayed); one that reached some outlets owes only the others.
        Where the marks cannot be read, as given: delivered again, harmless."""
        stored_at = {_mark_key(p.stored): p for p in pending if p.stored.position is not None}
        keys = [{"PK": pk, "SK": sk} for pk, sk in stored_at]
        try:
            items = batch_get(keys) if keys else []
        except (BotoCoreError, ClientError):
            return list(pending)
        marks = {(str(item["PK"]), str(item["SK"])): item for item in items}
        current = [p for p in pending if p.stored.position is None]
        for key, given in stored_at.items():
            item = marks.get(key)
            if item is None:  # not there to tell (expired since): as given, never dropped
                current.append(given)
            elif UNRELAYED in item:  # else relayed everywhere, or a late write's copy
                reached = frozenset(str(o) for o in item.get("relayedTo") or ())
                current.append(PendingEvent(given.stored, given.relayed_to | reached))
        return current

    def settle(self, stored: StoredEvent, reached: frozenset[str], done: bool) -> bool:
        """Record the outlets the event reached; ``done``: it reached every one, and leaves
        the index. Never brings back an item the TTL deleted. False when DynamoDB did not
        take it (the event stays marked as it was, and is relayed again)."""
        if stored.position is None:
            return False  # never stored: nothing to settle, it is relayed again
        key = event_key(node_events_pk(stored.event.node_id), stored.position)
        update: dict[str, Any] = {
            "TableName": settings().table_name,
            "Key": to_attributes(key),
            "ConditionExpression": "attribute_exists(PK)",
        }
        if done:
            update["UpdateExpression"] = "REMOVE #mark, relayedTo"
            update["ExpressionAttributeNames"] = {"#mark": UNRELAYED}
        else:
            update["UpdateExpression"] = "ADD relayedTo :reached"
            update["ExpressionAttributeValues"] = to_attributes({":reached": set(reached)})
        try:
            clients.dynamodb().update_item(**update)
        except ClientError as error:
            # Expired and deleted meanwhile: nothing left to settle.
            return error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"
        except BotoCoreError:
            return False
        return True
