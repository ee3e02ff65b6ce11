"""Where the relay takes each committed event: the org feeds, the stack's EventBridge bus,
and the node's own feed for the events derived from it (a node update's reviews).

Each outlet delivers a batch and answers the ids it could not deliver; it never raises for
an outage (the event stays marked, and the relay tries it again later). The relay asks an
outlet only for what the event's marks say it still owes; where a relay died between a
delivery and its mark, delivering again is harmless: a feed item is positioned when it is
written (``kernel.event_log``), so it is a second copy further on, and every reader, like the
bus's subscribers, deduplicates by the event's id.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from reservations.events.table.feeds import (
    DERIVED_BATCH,
    ReviewProgress,
    feed_item,
    feed_partitions,
    node_reservations,
    put_derived,
    record_reviewed_after,
    reviewed_after,
)
from reservations.kernel.aws import clients, event_items
from reservations.kernel.aws.batches import sized_batches
from reservations.kernel.aws.codec import Item, to_attributes
from reservations.kernel.envelope import StoredEvent
from reservations.kernel.event_log import record_position, written_late
from reservations.kernel.settings import event_bus_name, settings
from reservations.kernel.times import to_millisecond
from reservations.nodes import reservation_from_item, reviews_derived

FEEDS = "feeds"
BUS = "bus"
DERIVED = "derived"
# EventBridge's PutEvents takes 10 entries; BatchWriteItem 25 items.
BUS_BATCH = 10
WRITE_BATCH = 25
# Unprocessed items (throttling) are sent again this many times, after a short pause.
WRITE_TRIES = 3
SOURCE = "reservations"
# A node update's reviews: the reservations read a Query at a time, and the time one call
# of the outlet spends on them (the stream's relay has 30 s in all, the backlog's 60 s).
REVIEW_PAGE = 500
REVIEW_BUDGET_SECONDS = 10.0
# The derived events' pace: 400 of a node feed partition's 1,000 write units a second (each
# item, a review or the progress recorded with them, is 2 in a transaction), the rest for the
# node's own writes (``docs/scale.md``).
DERIVED_PER_SECOND = 200.0

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
        owed = [(stored, partition) for stored in events for partition in feed_partitions(stored)]
        failed: set[str] = set()
        for chunk in _chunks(owed, WRITE_BATCH):
            failed |= self._write_settled(chunk)
        return failed

    def _write_settled(self, chunk: Sequence[tuple[StoredEvent, str]]) -> set[str]:
        """One ``BatchWriteItem`` of feed items, positioned now; written again, newer, while
        it took a settle window or more (a reader may have passed the earlier position).
        The ids of the events not delivered within the window after ``WRITE_TRIES``."""
        for _ in range(WRITE_TRIES):
            positions = self._positions([stored.id for stored, _ in chunk])
            writes = [
                (stored.id, feed_item(stored, partition, positions[stored.id]))
                for stored, partition in chunk
            ]
            failed = self._write(writes)
            if not written_late(min(positions.values()), event_items.record_clock()):
                return failed
        return {stored.id for stored, _ in chunk}

    def _positions(self, event_ids: Sequence[str]) -> dict[str, str]:
        """Each event's position for a write sent now: a millisecond apart in the order the
        events came in, and after every position this relay gave before, so that every
        feed keeps the order of the node feeds the events came from."""
        first = max(
            to_millisecond(event_items.record_clock()), self._last + timedelta(milliseconds=1)
        )
        ordered = list(dict.fromkeys(event_ids))
        self._last = first + timedelta(milliseconds=len(ordered) - 1)
        return {
            event_id: record_position(first + timedelta(milliseconds=n), event_id)
            for n, event_id in enumerate(ordered)
        }

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
        for batch in sized_batches(events, _entry_size, BUS_BATCH):
            failed |= self._put(batch)
        return failed

    def _put(self, batch: Sequence[StoredEvent]) -> set[str]:
        entries = [
            {
                "Source": SOURCE,
                "DetailType": stored.event.type,
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


def _entry_size(stored: StoredEvent) -> int:
    """A ``PutEvents`` entry's size as EventBridge counts it: its time (14), source,
    detail type and detail, in UTF-8."""
    text = SOURCE + stored.event.type + stored.event.to_json()
    return 14 + len(text.encode())


class DerivedEvents:
    """Writes the events derived from a node update (one ``reservation.needs_review`` per
    reservation it put under review) into the node's feed; from there they are relayed like
    any other. The node's reservations are read a page at a time, and how far the reviews
    are written is kept on the update's item, recorded in each transaction that writes them
    (99 reviews and the progress: they land together or not at all), so a relay again goes
    on from there and writes none twice; a node with 10,000 reviews takes several
    invocations: within ``budget_seconds`` a call goes as far as it gets, answers the update
    as not delivered (it stays marked) and the next relay goes on. A call writes at most
    ``per_second`` items a second into the node's feed (the reviews and their progress; a
    transaction waits its turn), so that 10,000 reviews are not a burst the node feed's
    partition throttles. An event that derives none is delivered."""

    name = DERIVED

    def __init__(
        self,
        budget_seconds: float = REVIEW_BUDGET_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        per_second: float = DERIVED_PER_SECOND,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.budget_seconds = budget_seconds
        self.clock = clock
        self.per_second = per_second
        self.sleep = sleep

    def deliver(self, events: Sequence[StoredEvent]) -> set[str]:
        pace = _Pace(self.clock(), self.budget_seconds, self.per_second)
        return {
            stored.id
            for stored in events
            if stored.review is not None and not self._derive(stored, pace)
        }

    def _derive(self, stored: StoredEvent, pace: _Pace) -> bool:
        """True once every review of the update is written; False when time ran out,
        another relay of it moved the progress, or DynamoDB failed (what is written stays,
        with the progress it made: each transaction records its own)."""
        retention = settings().history_retention_days
        try:
            after = reviewed_after(stored)
            while self.clock() < pace.deadline:
                items, more = node_reservations(stored.event.node_id, after, REVIEW_PAGE)
                for through, reviews in _review_batches(stored, items):
                    step = ReviewProgress(stored, after, through)
                    if not self._turn(pace) or put_derived(reviews, retention, step):
                        return False
                    pace.written += len(reviews) + 1  # the progress is in the same partition
                    after = through
                if items and (end := str(items[-1]["SK"])) != after:  # the page's tail
                    if not record_reviewed_after(ReviewProgress(stored, after, end)):
                        return False  # derives none: a relay again starts past it
                    after = end
                if not more:
                    return True
        except AwsFailure:
            return False
        return False

    def _turn(self, pace: _Pace) -> bool:
        """Wait until the next transaction keeps the pace; False when that is past the
        call's time (the next relay goes on)."""
        due = pace.next_write_at()
        if due >= pace.deadline:
            return False
        if (wait := due - self.clock()) > 0:
            self.sleep(wait)
        return True


@dataclass(slots=True)
class _Pace:
    """One outlet call's derived writes: from ``started``, for ``budget`` seconds, at most
    ``per_second`` a second."""

    started: float
    budget: float
    per_second: float
    written: int = 0

    @property
    def deadline(self) -> float:
        return self.started + self.budget

    def next_write_at(self) -> float:
        return self.started + self.written / self.per_second


def _review_batches(
    stored: StoredEvent, items: Sequence[Item]
) -> Iterator[tuple[str, list[StoredEvent]]]:
    """The reviews the update derives from these reservation items, a transaction's worth
    at a time, each with the sort key of the last reservation it covers."""
    batch: list[StoredEvent] = []
    for item in items:
        batch += reviews_derived(stored, [reservation_from_item(item)])
        if len(batch) >= DERIVED_BATCH:
            yield str(item["SK"]), batch
            batch = []
    if batch:
        yield str(items[-1]["SK"]), batch
