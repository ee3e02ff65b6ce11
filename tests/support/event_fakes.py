"""In-memory fakes of the event ports, with DynamoDB's semantics where the logic relies on
them: feeds sorted by position (when the item was recorded: ``recording_at``, else the
event's own time), a Query that stops after ``count`` items or at ``before`` and says
where, feed items keyed by partition and position, and marks that an event keeps until it
reached every outlet."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from reservations.events.models import EventsRead, NodeFeedAccess, PendingEvent, UnreadableEvent
from reservations.events.rules.visibility import feed_org_ids
from reservations.events.table.keys import feed_shard
from reservations.kernel.envelope import StoredEvent
from reservations.kernel.event_log import record_position

PLATFORM = None  # the operator's feed, as the reader port names it


@dataclass
class FakeEvents:
    """The node feeds, the org feeds and the marks of one table."""

    access: dict[str, NodeFeedAccess] = field(default_factory=dict)
    node_feeds: dict[str, dict[str, StoredEvent]] = field(default_factory=dict)
    org_feeds: dict[str | None, dict[str, StoredEvent]] = field(default_factory=dict)
    marked: dict[str, PendingEvent] = field(default_factory=dict)
    unreadable: list[UnreadableEvent] = field(default_factory=list)
    queries: int = 0
    settles: int = 0
    settle_fails: bool = False
    # The writers' clock: None, each item is recorded at its event's time.
    recording_at: datetime | None = None
    # How many shards each org feed has (the operator's: None); one where not said. An org
    # feed holds every event of the org; a shard's read takes those of its nodes.
    shards: dict[str | None, int] = field(default_factory=dict)

    def position(self, stored: StoredEvent) -> str:
        """Where an item of ``stored`` written now is recorded."""
        return record_position(self.recording_at or stored.event.time, stored.id)

    # --- writing, as the changes' own transactions will --------------------------------------

    def commit(self, stored: StoredEvent, retention_days: int = 400) -> StoredEvent:
        """The event written with its change: in its node's feed, marked."""
        kept = replace(
            stored,
            expires_at=stored.event.time + timedelta(days=retention_days),
            position=self.position(stored),
        )
        self.node_feeds.setdefault(kept.event.node_id, {})[str(kept.position)] = kept
        self.marked[kept.id] = PendingEvent(kept)
        return kept

    # --- EventReader ------------------------------------------------------------------------

    def feed_access(self, node_id: str) -> NodeFeedAccess | None:
        return self.access.get(node_id)

    def node_events(self, node_id: str, after: str | None, before: str, count: int) -> EventsRead:
        return self._read(self.node_feeds.get(node_id, {}), after, before, count)

    def feed_shards(self, org_id: str | None) -> int:
        return self.shards.get(org_id, 1)

    def org_events(
        self, org_id: str | None, shard: int, after: str | None, before: str, count: int
    ) -> EventsRead:
        shards = self.feed_shards(org_id)
        feed = {
            position: stored
            for position, stored in self.org_feeds.get(org_id, {}).items()
            if feed_shard(stored.event.node_id, shards) == shard
        }
        return self._read(feed, after, before, count)

    def _read(
        self, feed: dict[str, StoredEvent], after: str | None, before: str, count: int
    ) -> EventsRead:
        self.queries += 1
        positions = sorted(p for p in feed if (after is None or p > after) and p < before)
        page = positions[:count]
        stopped = page[-1] if len(positions) > count else None
        return EventsRead(tuple(feed[p] for p in page), stopped)

    # --- UnrelayedEvents ----------------------------------------------------------------------

    def unrelayed(self, before: str, page_size: int) -> Iterator[PendingEvent | UnreadableEvent]:
        yield from self.unreadable
        for pending in sorted(self.marked.values(), key=lambda p: str(p.stored.position)):
            if str(pending.stored.position) < before and pending.stored.id in self.marked:
                yield self.marked[pending.stored.id]

    def current(self, pending: Sequence[PendingEvent]) -> list[PendingEvent]:
        return [self.marked[p.stored.id] for p in pending if p.stored.id in self.marked]

    def settle(self, stored: StoredEvent, reached: frozenset[str], done: bool) -> bool:
        self.settles += 1
        if self.settle_fails:
            return False
        if done:
            self.marked.pop(stored.id, None)
        elif stored.id in self.marked:
            before = self.marked[stored.id]
            self.marked[stored.id] = PendingEvent(before.stored, before.relayed_to | reached)
        return True

    def pending_of(self, stored: StoredEvent) -> PendingEvent:
        return self.marked[stored.id]


class Down(Exception):
    """What a fake outlet's outage looks like from inside (never seen by the relay)."""


@dataclass
class FakeFeeds:
    """The org feeds outlet: writes each event into the feeds of the orgs that may see it
    (and the operator's); ``fail_after`` items written, it is down."""

    table: FakeEvents
    name: str = "feeds"
    fail_after: int | None = None
    writes: int = 0

    def deliver(self, events: Sequence[StoredEvent]) -> set[str]:
        failed: set[str] = set()
        for stored in events:
            for org in [PLATFORM, *sorted(feed_org_ids(stored))]:
                if self.fail_after is not None and self.writes >= self.fail_after:
                    failed.add(stored.id)
                    continue
                self.writes += 1
                self.table.org_feeds.setdefault(org, {})[self.table.position(stored)] = stored
        return failed


@dataclass
class FakeBus:
    """The event bus outlet: what it received, in order (duplicates kept); down while
    ``down``."""

    name: str = "bus"
    down: bool = False
    received: list[str] = field(default_factory=list)
    calls: int = 0

    def deliver(self, events: Sequence[StoredEvent]) -> set[str]:
        self.calls += 1
        if self.down:
            return {stored.id for stored in events}
        self.received.extend(stored.id for stored in events)
        return set()


@dataclass
class CrashingFeeds(FakeFeeds):
    """Feeds that crash (the function dies) after ``crash_after`` item writes."""

    crash_after: int = 0

    def deliver(self, events: Sequence[StoredEvent]) -> set[str]:
        for stored in events:
            for org in [PLATFORM, *sorted(feed_org_ids(stored))]:
                if self.writes >= self.crash_after:
                    raise Down("the function died mid-fan-out")
                self.writes += 1
                self.table.org_feeds.setdefault(org, {})[self.table.position(stored)] = stored
        return set()
