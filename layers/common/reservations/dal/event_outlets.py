"""Where the relay takes each committed event: the org feeds, the stack's EventBridge bus,
and the node's own feed for the events derived from it (a node update's reviews).

Each outlet delivers a batch and answers the ids it could not deliver; it never raises for
an outage (the event stays marked, and the relay tries it again later). Delivering again is
harmless: a feed item is positioned when it is written (``rules.feeds``), so a second
delivery is a second copy further on, and every reader, like the bus's subscribers,
deduplicates by the event's id.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from reservations.config import event_bus_name, settings
from reservations.dal import clients
from reservations.dal import events as feed_writes
from reservations.dal.events import feed_items, put_derived
from reservations.dal.items import to_attributes
from reservations.dal.keys import Item
from reservations.models.events import StoredEvent
from reservations.models.times import to_millisecond
from reservations.rules.feeds import record_position, written_late

FEEDS = "feeds"
BUS = "bus"
DERIVED = "derived"
# EventBridge's PutEvents takes 10 entries; BatchWriteItem 25 items.
BUS_BATCH = 10
WRITE_BATCH = 25
# Unprocessed items (throttling) are sent again this many times, after a short pause.
WRITE_TRIES = 3
SOURCE = "reservations"

AwsFailure = (BotoCoreError, ClientError)


def _chunks(values: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


class OrgFeeds:
    """Fans each event out to the feed of every org that may see it (and the operator's),
    positioned when the relay writes it."""

    name = FEEDS

    def __init__(self) -> None:
        self._last = datetime.min.replace(tzinfo=UTC)  # the last millisecond positioned at

    def deliver(self, events: Sequence[StoredEvent]) -> set[str]:
        failed: set[str] = set()
        for chunk in _chunks(events, WRITE_BATCH):
            failed |= self._deliver_settled(chunk)
        return failed

    def _deliver_settled(self, events: Sequence[StoredEvent]) -> set[str]:
        """The events' items, positioned now; written again, newer, while the write took a
        settle window or more (a reader may have passed the earlier position). The ids of
        the events not delivered within the window after ``WRITE_TRIES`` writes."""
        for _ in range(WRITE_TRIES):
            now = to_millisecond(feed_writes.record_clock())
            position_at = max(now, self._last + timedelta(milliseconds=1))
            self._last = position_at + timedelta(milliseconds=len(events) - 1)
            # A millisecond apart, so that the feeds keep the order the events came in.
            writes = [
                (stored.id, item)
                for offset, stored in enumerate(events)
                for item in feed_items(
                    stored, record_position(position_at + timedelta(milliseconds=offset), stored.id)
                )
            ]
            failed: set[str] = set()
            for batch in _chunks(writes, WRITE_BATCH):
                failed |= self._write(batch)
            late_at = feed_writes.record_clock()
            if not written_late(record_position(position_at, ""), late_at):
                return failed
        return {stored.id for stored in events}

    def _write(self, batch: Sequence[tuple[str, Item]]) -> set[str]:
        """One batch (retrying what DynamoDB left unprocessed); the ids of the events whose
        items did not all land."""
        table = settings().table_name
        owner = {(item["PK"], item["SK"]): event_id for event_id, item in batch}
        requests = [{"PutRequest": {"Item": to_attributes(item)}} for _, item in batch]
        for attempt in range(WRITE_TRIES):
            try:
                response = clients.dynamodb().batch_write_item(RequestItems={table: requests})
            except AwsFailure:
                break
            requests = response.get("UnprocessedItems", {}).get(table, [])
            if not requests:
                return set()
            if attempt + 1 < WRITE_TRIES:  # no pause after the last try: it only delays
                time.sleep(0.05 * 2**attempt)
        return {owner[(r["PutRequest"]["Item"]["PK"]["S"], r["PutRequest"]["Item"]["SK"]["S"])]
                for r in requests}  # fmt: skip


class EventBus:
    """Puts each event on the stack's bus: ``source`` reservations, ``detail-type`` the
    event's type, ``detail`` the event (as the operator sees it: the bus is the platform's)."""

    name = BUS

    def deliver(self, events: Sequence[StoredEvent]) -> set[str]:
        failed: set[str] = set()
        for batch in _chunks(events, BUS_BATCH):
            failed |= self._put(batch)
        return failed

    def _put(self, batch: Sequence[StoredEvent]) -> set[str]:
        entries = [
            {
                "Source": SOURCE,
                "DetailType": stored.event.type.value,
                "Detail": stored.event.to_json(),
                "Time": stored.event.time,
                "EventBusName": event_bus_name(),
            }
            for stored in batch
        ]
        try:
            response = clients.events().put_events(Entries=entries)
        except AwsFailure:
            return {stored.id for stored in batch}
        # Entries answer in request order; a failed one carries an ErrorCode.
        return {
            stored.id
            for stored, entry in zip(batch, response.get("Entries", []), strict=False)
            if entry.get("ErrorCode") or not entry.get("EventId")
        } | {stored.id for stored in batch[len(response.get("Entries", [])) :]}


class DerivedEvents:
    """Writes the events derived from an event (``StoredEvent.derived``) into the node's
    feed, each once (conditional on its key: a relay again writes nothing twice); from
    there they are relayed like any other. An event that derives none is delivered."""

    name = DERIVED

    def deliver(self, events: Sequence[StoredEvent]) -> set[str]:
        retention = settings().history_retention_days
        return {
            stored.id
            for stored in events
            if not all([put_derived(derived, retention) for derived in stored.derived])
        }
