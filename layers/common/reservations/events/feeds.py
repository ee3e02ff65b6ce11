"""``GET /v1/nodes/{nodeId}/events`` and ``GET /v1/events``: the events a caller may see,
in the order they were recorded, one Query a page.

A page reads ``limit + 1`` events from its position on (the cursor's, else ``after``'s,
else the feed's start) up to the settle window's horizon (``kernel.event_log``: nothing
recorded in the last few seconds, where a slower write may still land before it), and
keeps those the caller may see, of the types asked for, not past retention. When more than
``limit`` are kept, the page ends at the ``limit``-th and the cursor points there; when the
Query stopped short of the horizon, where it stopped; otherwise the page reached the feed's
current end (``hasMore`` false) and the cursor points at the horizon, where the next events
will be. Every page has a cursor, and a page may hold fewer than ``limit`` events and still
``hasMore``. Who may see what is decided on every page (the node feed reads the node's list
access item first: one GetItem), never carried in the cursor, which is a position signed
for one feed, filter, ``after`` and org.

An org feed split into shards (the operator's: every event, too many writes a second for
one partition; ``docs/scale.md``) is read one Query per shard, each from the cursor's
position up to the same horizon, and merged into record order (positions are comparable
across shards: when the item was recorded, then the event's id). Where a shard's Query
stopped short, the page goes no further than that position: everything up to the first such
stop is read in every shard, and the next page starts there in every shard, so one position
is every shard's cursor. The cursor also says how many shards it has read: a shard the
feed gained since (its shard count was raised) is read from the feed's start (or
``after``), so nothing written there is passed over.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from reservations.events.models import EVENT_TYPES, EventPage, EventsRead
from reservations.events.ports import EventReader
from reservations.events.rules.visibility import (
    in_node_feed_of,
    may_read_node_feed,
    may_read_org_feed,
    sees_whole_node,
    shows_key_id,
)
from reservations.kernel.caller import Caller
from reservations.kernel.cursors import (
    Cursor,
    CursorScope,
    decode_cursor,
    encode_cursor,
    page_limit,
)
from reservations.kernel.envelope import StoredEvent
from reservations.kernel.errors import FieldProblem, InvalidRequest, NotFound
from reservations.kernel.event_log import after_instant, horizon
from reservations.kernel.ids import is_resource_id
from reservations.kernel.parallel import each
from reservations.kernel.times import parse_given_time, to_millisecond
from reservations.nodes import READ

NODE_FEED = "node-events"
ORG_FEED = "events"


@dataclass(frozen=True)
class FeedQuery:
    """The feed's query string as it came; a part given empty is absent."""

    types: str | None = None
    after: str | None = None
    limit: str | None = None
    cursor: str | None = None


@dataclass(frozen=True)
class _Parsed:
    types: frozenset[str]
    limit: int
    position: str | None  # where the page starts (exclusive)
    scope: CursorScope
    start: str | None = None  # where the feed starts: ``after``'s position, else None
    shards_read: int = 0  # the shards the cursor read up to ``position`` (0: no cursor)


def node_feed(
    caller: Caller,
    node_id: str,
    query: FeedQuery,
    reader: EventReader,
    cursor_key: bytes,
    now: datetime,
) -> EventPage:
    """A page of the node's events the caller may see; the 404 for an org that may see no
    event of the node (neither operator nor owner nor named by its reservations or
    workloads), as for an unknown node."""
    if not is_resource_id(node_id) or not caller.has(READ):
        raise NotFound()
    access = reader.feed_access(node_id)
    if not (caller.platform_operator or (access and may_read_node_feed(caller, access, now))):
        raise NotFound()
    parsed = _parse(query, NODE_FEED, node_id, caller.org_id, cursor_key)
    if access is None:  # the operator on an unknown node, once the query is known good
        raise NotFound()
    sees_whole = sees_whole_node(caller, access)
    end = horizon(now)
    read = reader.node_events(node_id, parsed.position, end, parsed.limit + 1)
    return _page(
        read,
        parsed,
        end,
        cursor_key,
        keep=lambda stored: in_node_feed_of(stored, caller, sees_whole),
        show_key_id=lambda _: sees_whole,
        now=now,
        viewer=None if sees_whole else caller.org_id,
    )


def org_feed(
    caller: Caller, query: FeedQuery, reader: EventReader, cursor_key: bytes, now: datetime
) -> EventPage:
    """A page of every event the caller's org may see, across nodes (the operator: every
    event); ``events.read`` or the 404."""
    if not may_read_org_feed(caller):
        raise NotFound()
    parsed = _parse(query, ORG_FEED, "", caller.org_id, cursor_key)
    feed = None if caller.platform_operator else caller.org_id
    end = horizon(now)
    shards = max(reader.feed_shards(feed), parsed.shards_read)
    # One Query per shard, at once (they are independent; their merge is in record order).
    reads = each(
        lambda shard: reader.org_events(
            feed,
            shard,
            parsed.position if shard < parsed.shards_read else parsed.start,
            end,
            parsed.limit + 1,
        ),
        range(shards),
    )
    return _page(
        merge_shards(reads),
        parsed,
        end,
        cursor_key,
        keep=lambda _: True,  # the org's feed holds only what it may see
        show_key_id=lambda stored: shows_key_id(caller, stored.owner_org_id),
        now=now,
        shards=shards,
    )


def merge_shards(reads: Sequence[EventsRead]) -> EventsRead:
    """One read of a sharded feed from its shards' reads (each in record order, from the
    same position to the same horizon): their events in record order up to the first
    position where a shard's Query stopped short (beyond it that shard was not read), and
    that position as where the read stopped; a single read as it is. (A page reads one
    event more than it shows from every shard, so a shard that stopped short alone fills
    the page before that position; the bound keeps the merge right on its own.)"""
    if len(reads) == 1:
        return reads[0]
    stops = [read.last_position for read in reads if read.last_position is not None]
    bound = min(stops) if stops else None
    merged = sorted(
        (stored for read in reads for stored in read.events),
        key=lambda stored: str(stored.position),
    )
    if bound is not None:
        merged = [stored for stored in merged if str(stored.position) <= bound]
    return EventsRead(tuple(merged), bound)


def _page(
    read: EventsRead,
    parsed: _Parsed,
    end: str,
    cursor_key: bytes,
    keep: Callable[[StoredEvent], bool],
    show_key_id: Callable[[StoredEvent], bool],
    now: datetime,
    viewer: str | None = None,
    shards: int | None = None,
) -> EventPage:
    """``viewer``: the org whose reduced views the page shows (an org's own feed holds its
    views already, as the relay wrote them; None: whole events)."""
    kept = [
        stored
        for stored in read.events
        if keep(stored)
        and (not parsed.types or stored.event.type in parsed.types)
        and (stored.expires_at is None or stored.expires_at > now)
    ]
    page = kept[: parsed.limit]
    full = len(kept) > parsed.limit
    position = _next_position(page, full, read, parsed.position, end)
    return EventPage.model_validate(
        {
            "items": [stored.seen_by(viewer).envelope(show_key_id(stored)) for stored in page],
            "next_cursor": encode_cursor(Cursor(position, shards), parsed.scope, cursor_key),
            "has_more": full or read.last_position is not None,
        }
    )


def _next_position(
    page: list[StoredEvent], full: bool, read: EventsRead, start: str | None, end: str
) -> str:
    """Where the next page starts: after the page's last event when more were kept than it
    holds; where the Query stopped, when it stopped short; else at the horizon (never back
    before where this page started: a cursor beyond the horizon stays where it is)."""
    if full:
        return str(page[-1].position)
    if read.last_position is not None:
        return read.last_position
    return max(start or "", end)


def _parse(query: FeedQuery, feed: str, node_id: str, org_id: str, cursor_key: bytes) -> _Parsed:
    """Each part checked (a 400 naming it); a cursor must be this feed's, for the same types
    (in any order) and ``after`` (to the millisecond), made for the caller's org."""
    types = _types(query.types or None)
    start = _after(query.after or None)
    scope = CursorScope(node_id, ",".join(sorted(types)), org_id, feed, start or "")
    limit = page_limit(query.limit)
    if not query.cursor:
        return _Parsed(types, limit, start, scope, start)
    cursor = decode_cursor(query.cursor, scope, cursor_key)
    # A cursor from before feeds had shards read the one partition: shard 0.
    return _Parsed(types, limit, cursor.after, scope, start, cursor.shards or 1)


def _types(text: str | None) -> frozenset[str]:
    """Comma-separated event types (spaces around each ignored); an unknown or empty one is
    a 400 naming ``types``."""
    if text is None:
        return frozenset()
    names = [name.strip(" ") for name in text.split(",")]
    known = set(EVENT_TYPES)
    if unknown := [name for name in names if name not in known]:
        raise InvalidRequest(
            "types must be a comma-separated list of event types",
            [FieldProblem("types", f"unknown event type {unknown[0][:60]!r}")],
        )
    return frozenset(names)


def _after(text: str | None) -> str | None:
    """Where a feed after ``text`` starts (exclusive): past every event recorded at its
    millisecond or before (positions are kept to the millisecond). A 400 naming ``after``
    when it is not a time by the one rule for given times."""
    if text is None:
        return None
    try:
        moment = parse_given_time(text)
    except ValueError as error:
        raise InvalidRequest(f"after {error}", [FieldProblem("after", str(error))]) from None
    return after_instant(to_millisecond(moment))
