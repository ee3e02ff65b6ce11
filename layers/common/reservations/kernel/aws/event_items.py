"""Events as items: the item a new event is first written as, in its change's own transaction
(with what the relay needs: ``unrelayed`` and what it derives further events from), and the
same event written again, newer, when its write answered a settle window or more after its
position (``kernel.event_log``): a feed may hold an event twice, readers deduplicate by id.
Which feed an event goes to is its slice's to say (the partition key is given)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from botocore.exceptions import BotoCoreError, ClientError

from reservations.kernel.aws import clients
from reservations.kernel.aws.actions import Action
from reservations.kernel.aws.codec import Item, from_attributes, to_attributes
from reservations.kernel.envelope import StoredEvent
from reservations.kernel.event_log import record_position, written_late
from reservations.kernel.settings import settings
from reservations.kernel.shards import shard_of
from reservations.kernel.times import format_event_time, to_millisecond

UNRELAYED = "unrelayed"
PENDING = "pending"
# The relay's marks (``unrelayed``, the UnrelayedEvents index's partition key) are split
# over this many index partitions by the event's node: every event is written into the
# index and removed from it, more writes a second than one partition takes at 100,000 nodes
# (``docs/scale.md``). Mark 0 is ``pending``, as every mark was before; mark k is
# ``pending#<k>``. Only ever raise it: the scheduled relay reads every mark below it.
RELAY_MARK_SHARDS = 32
REVIEW = "review"
# An event's time, then its id: the sort key of the EventsByTime index (a node's feed in
# ``time`` order, whenever each event was recorded: a time-ordered read of the changes).
EVENT_TIME = "eventTime"
# The reduced views of an event some orgs of its audience see instead (JSON; ``StoredEvent``).
VIEWS = "views"
# Rewrites of one late item before giving up (each is a single PutItem).
REWRITE_TRIES = 3


def record_clock() -> datetime:
    """The clock a feed write is positioned and timed by: the host's (in Lambda, kept by the
    Amazon Time Sync Service)."""
    return datetime.now(UTC)


def new_position(stored: StoredEvent) -> str:
    """A position for the event written now."""
    return record_position(to_millisecond(record_clock()), stored.id)


def expires_at(stored: StoredEvent, retention_days: int) -> datetime:
    """When the event leaves the feeds: its time plus the retention (within year 9999)."""
    try:
        return stored.event.time + timedelta(days=retention_days)
    except OverflowError:
        return datetime.max.replace(tzinfo=UTC)


def feed_item_of(
    partition: str,
    stored: StoredEvent,
    expiry: datetime,
    position: str,
    viewer: str | None = None,
) -> Item:
    """The event's item at ``position`` of a feed: as ``viewer`` sees it, when the feed is
    that org's (``StoredEvent.seen_by``)."""
    return {
        "PK": partition,
        "SK": position,
        "eventId": stored.id,
        "type": stored.event.type,
        "event": stored.seen_by(viewer).to_json(),
        "ownerOrgId": stored.owner_org_id,
        "expiresAtEpoch": int(expiry.timestamp()),
    }


def event_item(stored: StoredEvent, partition: str, retention_days: int, position: str) -> Item:
    """The item of a new event at ``position`` of the feed it is first written to (its
    node's): with its audience, what the relay derives further events from (``review``),
    its place by time (``eventTime``), and not yet relayed."""
    return {
        **feed_item_of(partition, stored, expires_at(stored, retention_days), position),
        EVENT_TIME: event_time_key(stored.event.time, stored.id),
        "audienceOrgIds": set(stored.audience_org_ids) or None,  # a set cannot be empty
        REVIEW: stored.review.to_json() if stored.review else None,
        VIEWS: stored.views_json(),
        UNRELAYED: relay_mark(stored.event.node_id),
    }


def event_time_key(time: datetime, event_id: str) -> str:
    """An event's place in its feed by ``time`` (fixed width, so text order is time order;
    the id breaks ties)."""
    return f"{format_event_time(time)}#{event_id}"


def relay_mark(node_id: str) -> str:
    """The relay's mark on a new event of the node: the index partition it waits in."""
    shard = shard_of(node_id, RELAY_MARK_SHARDS)
    return PENDING if shard == 0 else f"{PENDING}#{shard}"


def relay_marks() -> list[str]:
    """Every mark an event may wait under (the index partitions the scheduled relay reads)."""
    return [PENDING, *(f"{PENDING}#{shard}" for shard in range(1, RELAY_MARK_SHARDS))]


def event_put(stored: StoredEvent, partition: str, retention_days: int) -> Action:
    """The TransactWriteItems action that writes a new event with its change, positioned now
    (only if it is not there: the same id, in the same millisecond, is the same write)."""
    item = event_item(stored, partition, retention_days, new_position(stored))
    return {
        "Put": {
            "TableName": settings().table_name,
            "Item": to_attributes(item),
            "ConditionExpression": "attribute_not_exists(PK)",
        }
    }


def rewrite_late(puts: list[Action]) -> set[str]:
    """After a write that put new events (``puts``: :func:`event_put`'s, answered now): each
    one put a settle window or more after its position is written again, newer (see
    :func:`_rewrite`). The ids of the events no copy of which landed within the window."""
    answered_at = record_clock()
    behind: set[str] = set()
    for action in puts:
        item = from_attributes(action["Put"]["Item"])
        if written_late(item["SK"], answered_at) and not _rewrite(item):
            behind.add(str(item["eventId"]))
    return behind


def _rewrite(item: Item) -> bool:
    """The node feed item again at a newer position, as a copy for the feed's readers only:
    without the relay's mark and the review scope (the item first written carries those),
    until a copy lands within the window. False when none did."""
    copy = {name: value for name, value in item.items() if name not in (UNRELAYED, REVIEW)}
    for _ in range(REWRITE_TRIES):
        position = record_position(to_millisecond(record_clock()), str(item["eventId"]))
        copy["SK"] = position
        try:
            clients.dynamodb().put_item(TableName=settings().table_name, Item=to_attributes(copy))
        except (BotoCoreError, ClientError):
            continue
        if not written_late(position, record_clock()):
            return True
    return False
