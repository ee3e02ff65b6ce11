"""Events in the table: the node feeds, the org feeds, and the relay's marks.

- A node's feed: ``NODEEVT#<node>``, sort key ``<time to the ms>#<event id>``, so the feed
  is in time order and ``after`` and a page's position are key conditions. Never in the node
  partition (``NODE#<node>``): the node's present must not grow with its past.
- An org's feed: ``ORGEVT#<org>``, the same sort key, so relaying an event twice writes the
  same items. The operator's feed, every event of every node, is ``ORGEVT#/platform`` ("/"
  is in no org id).
- A node feed item is born with ``unrelayed`` (the sparse ``UnrelayedEvents`` index, sorted
  by the same sort key) and ``relayedTo``, the outlets it reached so far; it leaves the index
  once it reached every outlet. Org feed items never carry it.
- Every event item expires (``expiresAtEpoch``, the table's TTL) ``HistoryRetentionDays``
  after the event; readers treat an item past it as gone before the TTL deletes it.

The write that makes a change puts its events with :func:`event_put` in its own transaction;
:func:`put_event` writes one on its own (tests, tools).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from reservations.config import settings
from reservations.dal import clients
from reservations.dal.items import from_attributes, named_from_item, to_attributes
from reservations.dal.keys import (
    NODE_EVENTS_PREFIX,
    PLATFORM_FEED,
    RESERVATION_PREFIX,
    Item,
    access_key,
    event_key,
    node_events_pk,
    node_pk,
    org_events_pk,
)
from reservations.models.events import (
    CloudEvent,
    EventsRead,
    NodeFeedAccess,
    PendingEvent,
    ReviewScope,
    StoredEvent,
    UnreadableEvent,
)
from reservations.rules.event_visibility import feed_org_ids

UNRELAYED = "unrelayed"
PENDING = "pending"
UNRELAYED_INDEX = "UnrelayedEvents"
REVIEW = "review"
# How far the relay got deriving a node update's reviews: the last reservation's sort key.
REVIEWED_AFTER = "reviewedAfter"
# Derived events written in one transaction (TransactWriteItems takes 100 actions).
DERIVED_BATCH = 100
_THERE = "ConditionalCheckFailed"

Action = dict[str, Any]


def expires_at(stored: StoredEvent, retention_days: int) -> datetime:
    """When the event leaves the feeds: its time plus the retention (within year 9999)."""
    try:
        return stored.event.time + timedelta(days=retention_days)
    except OverflowError:
        return datetime.max.replace(tzinfo=UTC)


def _feed_item(partition: str, stored: StoredEvent, expiry: datetime) -> Item:
    return {
        **event_key(partition, stored.event.position),
        "eventId": stored.id,
        "type": stored.event.type.value,
        "event": stored.event.to_json(),
        "ownerOrgId": stored.owner_org_id,
        "expiresAtEpoch": int(expiry.timestamp()),
    }


def event_item(stored: StoredEvent, retention_days: int) -> Item:
    """The node feed's item of a new event: with its audience, a node update's review scope
    (``review``, from which the relay derives its reviews: bounded by the node's units), and
    not yet relayed."""
    return {
        **_feed_item(
            node_events_pk(stored.event.node_id), stored, expires_at(stored, retention_days)
        ),
        "audienceOrgIds": set(stored.audience_org_ids) or None,  # a set cannot be empty
        REVIEW: stored.review.to_json() if stored.review else None,
        UNRELAYED: PENDING,
    }


def event_put(stored: StoredEvent, retention_days: int) -> Action:
    """The TransactWriteItems action that writes a new event with its change (only if it is
    not there: a rebuilt write carries the same id, and must not write it twice)."""
    return {
        "Put": {
            "TableName": settings().table_name,
            "Item": to_attributes(event_item(stored, retention_days)),
            "ConditionExpression": "attribute_not_exists(PK)",
        }
    }


def put_event(stored: StoredEvent) -> None:
    """One event on its own (it is normally written by its change's transaction)."""
    request = event_put(stored, settings().history_retention_days)["Put"]
    clients.dynamodb().put_item(**request)


def put_derived(derived: Sequence[StoredEvent], retention_days: int) -> set[str]:
    """Derived events into the node's feed, each unless it is there already (written by an
    earlier relay of the same event: the same id, the same key), up to 100 in one
    transaction. The ids DynamoDB did not take."""
    failed: set[str] = set()
    for start in range(0, len(derived), DERIVED_BATCH):
        failed |= _put_batch(derived[start : start + DERIVED_BATCH], retention_days)
    return failed


def _put_batch(batch: Sequence[StoredEvent], retention_days: int) -> set[str]:
    """One transaction of conditional puts; when it is refused because some are there
    already (a relay again), again without those, or one by one when DynamoDB says not
    which."""
    while batch:
        actions = [event_put(stored, retention_days) for stored in batch]
        try:
            clients.dynamodb().transact_write_items(TransactItems=actions)
            return set()
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "TransactionCanceledException":
                return {stored.id for stored in batch}
            reasons = [r.get("Code") for r in error.response.get("CancellationReasons", [])]
            if len(reasons) != len(batch) or _THERE not in reasons:
                return {stored.id for stored in batch if not _put_one(stored, retention_days)}
            batch = [s for s, code in zip(batch, reasons, strict=True) if code != _THERE]
        except BotoCoreError:
            return {stored.id for stored in batch}
    return set()


def _put_one(stored: StoredEvent, retention_days: int) -> bool:
    """One derived event unless it is there; False when DynamoDB did not take it."""
    try:
        clients.dynamodb().put_item(**event_put(stored, retention_days)["Put"])
    except ClientError as error:
        return error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"
    except BotoCoreError:
        return False
    return True


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
    key = event_key(node_events_pk(stored.event.node_id), stored.event.position)
    return {"TableName": settings().table_name, "Key": to_attributes(key)}


def reviewed_after(stored: StoredEvent) -> str | None:
    """Where the relay got deriving the update's reviews (None: not started, or gone)."""
    item = (
        clients.dynamodb()
        .get_item(**_event_key(stored), ConsistentRead=True, ProjectionExpression=REVIEWED_AFTER)
        .get("Item")
    )
    return str(from_attributes(item)[REVIEWED_AFTER]) if item else None


def record_reviewed_after(stored: StoredEvent, sort_key: str) -> None:
    """Remember that the update's reviews are written up to the reservation ``sort_key``
    (never bringing back an item the TTL deleted)."""
    try:
        clients.dynamodb().update_item(
            **_event_key(stored),
            UpdateExpression="SET #after = :after",
            ConditionExpression="attribute_exists(PK)",
            ExpressionAttributeNames={"#after": REVIEWED_AFTER},
            ExpressionAttributeValues=to_attributes({":after": sort_key}),
        )
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
            raise


def stored_event_from_item(item: Item) -> StoredEvent:
    epoch = item.get("expiresAtEpoch")
    return StoredEvent(
        event=CloudEvent.from_json(item["event"]),
        owner_org_id=item["ownerOrgId"],
        audience_org_ids=frozenset(str(org) for org in item.get("audienceOrgIds") or ()),
        expires_at=datetime.fromtimestamp(int(epoch), UTC) if epoch is not None else None,
        review=ReviewScope.from_json(item[REVIEW]) if item.get(REVIEW) else None,
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


def feed_items(stored: StoredEvent) -> list[Item]:
    """The event's items in the org feeds: the operator's, and each org of ``org_ids``."""
    return [
        _feed_item(partition, stored, stored.expires_at or datetime.max.replace(tzinfo=UTC))
        for partition in feed_partitions(stored)
    ]


def feed_partitions(stored: StoredEvent) -> list[str]:
    """The operator's feed, then the feed of each org that may see the event."""
    return [PLATFORM_FEED, *(org_events_pk(org) for org in sorted(feed_org_ids(stored)))]


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


def read_feed(partition: str, after: str | None, count: int) -> EventsRead:
    """One Query: up to ``count`` events of the feed after position ``after``, in order."""
    condition = "PK = :pk"
    values: dict[str, Any] = {":pk": partition}
    if after is not None:
        condition += " AND SK > :after"
        values[":after"] = after
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

    def node_events(self, node_id: str, after: str | None, count: int) -> EventsRead:
        return read_feed(node_events_pk(node_id), after, count)

    def org_events(self, org_id: str | None, after: str | None, count: int) -> EventsRead:
        """``org_id`` None: the operator's feed."""
        partition = PLATFORM_FEED if org_id is None else org_events_pk(org_id)
        return read_feed(partition, after, count)


# --- the relay's marks ------------------------------------------------------------------------


def _readable(item: Item) -> PendingEvent | UnreadableEvent:
    """The marked item as an event, or what is wrong with it (a bug that wrote it must not
    stop the relay of every event after it)."""
    try:
        return pending_event_from_item(item)
    except (KeyError, ValueError, TypeError) as error:
        return UnreadableEvent(f"{item.get('PK')} {item.get('SK')}", repr(error)[:200])


class RelayMarks:
    """Which events still owe an outlet: the sparse index, and settling what they reached."""

    def unrelayed(self, before: str, page_size: int) -> Iterator[PendingEvent | UnreadableEvent]:
        """Every event still marked whose position is before ``before``, oldest first (the
        index is eventually consistent: one just settled may still show)."""
        query: dict[str, Any] = {
            "TableName": settings().table_name,
            "IndexName": UNRELAYED_INDEX,
            "KeyConditionExpression": "#mark = :pending AND SK < :before",
            "ExpressionAttributeNames": {"#mark": UNRELAYED},
            "ExpressionAttributeValues": to_attributes({":pending": PENDING, ":before": before}),
            "Limit": page_size,
        }
        while True:
            page = clients.dynamodb().query(**query)
            for item in page["Items"]:
                yield _readable(from_attributes(item))
            if "LastEvaluatedKey" not in page:
                return
            query["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def settle(self, stored: StoredEvent, reached: frozenset[str], done: bool) -> bool:
        """Record the outlets the event reached; ``done``: it reached every one, and leaves
        the index. Never brings back an item the TTL deleted. False when DynamoDB did not
        take it (the event stays marked as it was, and is relayed again)."""
        key = event_key(node_events_pk(stored.event.node_id), stored.event.position)
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
