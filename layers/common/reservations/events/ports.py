"""What the event feeds and the event relay need from the world, as Protocols: the functions
wire the DynamoDB and EventBridge implementations (``events/table/feeds.py``,
``events/table/outlets.py``), the logic tests in-memory fakes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from reservations.events.models import EventsRead, NodeFeedAccess, PendingEvent, UnreadableEvent
from reservations.kernel.envelope import StoredEvent


class EventReader(Protocol):
    """The feeds in record order, one Query a page; positions are exclusive (``after`` None:
    the start; ``before``: the settle window's horizon)."""

    def feed_access(self, node_id: str) -> NodeFeedAccess | None:
        """Who may read the node's feed; None for an unknown node."""

    def node_events(
        self, node_id: str, after: str | None, before: str, count: int
    ) -> EventsRead: ...

    def feed_shards(self, org_id: str | None) -> int:
        """How many shards the org's feed is split into now (``org_id`` None: the
        operator's feed); one is a feed of one partition."""

    def org_events(
        self, org_id: str | None, shard: int, after: str | None, before: str, count: int
    ) -> EventsRead:
        """One shard of the org's feed (``org_id`` None: the operator's feed, every event)."""


class Outlet(Protocol):
    """A place every event must reach at least once (org feeds, the bus; webhooks next)."""

    name: str

    def deliver(self, events: Sequence[StoredEvent]) -> set[str]:
        """Deliver them; the ids it could not deliver (never raises for an outage)."""


class UnrelayedEvents(Protocol):
    """Which events still owe an outlet (the table's relay marks, ``events.table.feeds``)."""

    def unrelayed(self, before: str, page_size: int) -> Iterator[PendingEvent | UnreadableEvent]:
        """The events still marked, positioned before ``before``, oldest first (an item
        that is no readable event is answered as such, in its place)."""

    def current(self, pending: Sequence[PendingEvent]) -> list[PendingEvent]:
        """The events with their marks as they stand now: those relayed everywhere since
        left out, the others owing only what they have not reached."""

    def settle(self, stored: StoredEvent, reached: frozenset[str], done: bool) -> bool:
        """Record the outlets it reached now; ``done``: it reached every outlet. False when
        it could not be recorded (it stays marked as it was)."""
