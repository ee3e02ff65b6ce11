"""``GET /v1/reservations``: every reservation the caller's org may see, across the fleet,
by end (open-ended last), node, id.

A page is one Query of the org's fleet index (the operator's own index when it asks with
no ``role``) from the cursor's place, then the reservations its entries name and their
nodes in at most two BatchGetItem (100 keys each): visibility, roles and statuses are
decided again from what was read, never from the index, so an entry of a reservation the
caller may no longer see (a node sold, an org taken off) is skipped, and one whose place
moved (its ``endsAt`` changed, it went to the history) is skipped where it was and listed
where it is now. A query that reads both the live and the ended partitions (``expired``,
``cancelled``) merges one Query of each. A page stops when it has ``limit`` items or the
index ends; it is never empty while it has a ``nextCursor`` (it reads on)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from reservations.kernel.caller import Caller
from reservations.kernel.cursors import (
    Cursor,
    CursorScope,
    decode_cursor,
    encode_cursor,
    page_limit,
)
from reservations.kernel.errors import NotFound
from reservations.kernel.times import format_time
from reservations.lifecycle.models import FleetReservationPage, ReservationView
from reservations.lifecycle.rules.fleet import (
    ALL_STATUSES,
    FLEET_PLATFORM,
    ROLES,
    Entry,
    EntryFilter,
    FleetFilters,
    Range,
    ends_match,
    entry_filter,
    fleet_sk,
    may_match,
    parse_filters,
    plan,
    roles_now,
)
from reservations.lifecycle.table.fleet import EntriesRead, Found
from reservations.lifecycle.views import reservation_view
from reservations.nodes import READ, Node, Reservation, Unit, effective_status

# What binds a fleet list's cursor to this list (no event feed or node list has it).
FLEET_FEED = "/fleet"
# Index reads a page makes to fill itself once it has an item (one with none reads on).
MAX_ROUNDS = 5
# The most entries one index read takes: a page that found nothing yet reads on in reads
# four times larger each. The Query returns only the entries that may match (the rest
# cost read units, not bytes), and its 1 MB bounds it first (about 4,000 entries of
# ~250 bytes); the reservations are read a page at a time.
MAX_INDEX_READ = 10_000


@dataclass(frozen=True)
class FleetQuery:
    """The query string as it came; each part optional, each checked here."""

    role: str | None = None
    status: str | None = None
    node_id: str | None = None
    gpu_model_id: str | None = None
    ends_before: str | None = None
    ends_after: str | None = None
    limit: str | None = None
    cursor: str | None = None


class FleetIndex(Protocol):
    def entries(self, where: Range, limit: int, only: EntryFilter | None) -> EntriesRead: ...

    def read(self, entries: list[Entry]) -> Found: ...

    def entry_nodes(self, where: Range) -> Iterator[str]: ...

    def units(self, wanted: set[tuple[str, str]]) -> dict[tuple[str, str], Unit]: ...


def list_fleet_reservations(
    caller: Caller, query: FleetQuery, index: FleetIndex, cursor_key: bytes, now: datetime
) -> FleetReservationPage:
    """A page of the reservations the caller may see across the fleet; never a 404 but for
    a key without ``reservation.read``."""
    if not caller.has(READ):
        raise NotFound()
    filters = _filters(query)
    limit = page_limit(query.limit)
    everything = caller.platform_operator and not filters.role_given
    scope = CursorScope("", filters.canonical(), caller.org_id, FLEET_FEED)
    position = decode_cursor(query.cursor, scope, cursor_key).after if query.cursor else None
    ranges = plan(FLEET_PLATFORM if everything else caller.org_id, filters, now)
    page = _Page(caller, filters, everything, now, limit, index)
    only = entry_filter(filters, everything)
    # One more than a page: a page that ends the index says so (no cursor to an empty page).
    more, rounds, size = bool(ranges), 0, limit + 1
    # The index drops the entries that cannot match (rules.fleet.entry_filter, may_match):
    # a page reads on through what it drops, each read four times larger while it finds
    # fewer than it has room for, but after a few rounds, or a page's worth of reservations
    # the fresh read ruled out, answers what it has (never an empty page with a cursor: an
    # empty one reads on to the end).
    while more and not page.full and not (page.items and page.done_reading(rounds)):
        rounds += 1 if page.items else 0
        entries, reached = _next_entries(index, ranges, position, size, only)
        # Fewer entries may match than the page has room for: the next read is larger.
        sparse = len(entries) < limit - len(page.items)
        taken = page.take(entries)
        if taken < len(entries):
            position, more = str(entries[taken - 1]["SK"]), True
        else:
            position = reached or position
            more = reached is not None
        size = min(MAX_INDEX_READ, size * 4) if sparse else limit + 1
    cursor = encode_cursor(Cursor(position), scope, cursor_key) if more and position else None
    return FleetReservationPage(items=page.items, next_cursor=cursor)


@dataclass
class _Page:
    """A page being filled: it reads only the reservations whose entries may match, never
    more at once than it has room for, and counts those the fresh read ruled out (an entry
    the index has not caught up with)."""

    caller: Caller
    filters: FleetFilters
    everything: bool
    now: datetime
    limit: int
    index: FleetIndex
    items: list[ReservationView] = field(default_factory=list)
    ruled_out: int = 0

    @property
    def full(self) -> bool:
        return len(self.items) >= self.limit

    def done_reading(self, rounds: int) -> bool:
        """Whether a page that has items answers them now: after ``MAX_ROUNDS`` index
        reads since it had one, or once a page's worth of reservations read were ruled
        out."""
        return rounds >= MAX_ROUNDS or self.ruled_out >= self.limit

    def take(self, entries: list[Entry]) -> int:
        """Lists what ``entries`` give, in order, until the page is full (or done
        reading); how many of them it went through (the last one is where it stops)."""
        taken = 0
        while taken < len(entries) and not self.full:
            chunk, wanted = self._next_chunk(entries[taken:])
            found = self.index.read(wanted) if wanted else Found({}, {})
            units = _units(self.index, found, self.filters)
            for entry in wanted:
                view = _shown(entry, found, units, self.caller, self.filters,
                              self.everything, self.now)  # fmt: skip
                if view is None:
                    self.ruled_out += 1
                else:
                    self.items.append(view)
            taken += len(chunk)
            if self.items and self.done_reading(0):
                break
        return taken

    def _next_chunk(self, entries: list[Entry]) -> tuple[list[Entry], list[Entry]]:
        """The entries up to the one that makes as many that may match as the page has
        room for (and, once it has items, as it may still rule out), and those that may
        match among them."""
        room = self.limit - len(self.items)
        if self.items:  # what a page with items may still read and rule out
            room = min(room, self.limit - self.ruled_out)
        chunk: list[Entry] = []
        wanted: list[Entry] = []
        for entry in entries:
            if len(wanted) == room:
                break
            chunk.append(entry)
            if may_match(entry, self.filters, self.everything, self.now):
                wanted.append(entry)
        return chunk, wanted


def _filters(query: FleetQuery) -> FleetFilters:
    """The query's filters, parsed (400 naming the field)."""
    return parse_filters(
        query.role,
        query.status,
        query.node_id,
        query.gpu_model_id,
        query.ends_before,
        query.ends_after,
    )


def _next_entries(
    index: FleetIndex,
    ranges: list[Range],
    position: str | None,
    size: int,
    only: EntryFilter | None,
) -> tuple[list[Entry], str | None]:
    """The next entries after ``position`` over the ranges that ``only`` lets through,
    merged in sort-key order (one Query of at most ``size`` entries a range), and the sort
    key up to which they are all there is (None: to the end of every range): with two
    ranges, only what sorts before the end of what each read is sure to be next."""
    reads = []
    for where in ranges:
        # "!" sorts below every character an id may have: just after ``position``.
        low = max(where.low, position + "!") if position is not None else where.low
        if low <= where.high:
            reads.append(index.entries(Range(where.pk, low, where.high), size, only))
    merged = sorted((e for read in reads for e in read.entries), key=lambda e: str(e["SK"]))
    reached = min((read.stopped_at for read in reads if read.stopped_at), default=None)
    return [e for e in merged if reached is None or str(e["SK"]) <= reached], reached


def _units(index: FleetIndex, found: Found, filters: FleetFilters) -> dict[tuple[str, str], Unit]:
    """The reserved units' items, for a filter by GPU model (the index does not keep it)."""
    if filters.gpu_model_id is None or not found.reservations:
        return {}
    return index.units(
        {(r.node_id, u) for r in found.reservations.values() for u in r.reserved_unit_ids}
    )


def _shown(
    entry: Entry,
    found: Found,
    units: dict[tuple[str, str], Unit],
    caller: Caller,
    filters: FleetFilters,
    everything: bool,
    now: datetime,
) -> ReservationView | None:
    """The entry's reservation as the caller sees it, or None: gone from where the entry
    says, at another place now, past its retention, not visible, or not matching."""
    reservation = found.reservations.get((str(entry["PK"]), str(entry["SK"])))
    node = found.nodes.get(str(entry["nodeId"]))
    if reservation is None or node is None or not reservation.retained_at(now):
        return None
    ends = format_time(reservation.ends_at) if reservation.ends_at else None
    if fleet_sk(ends, reservation.node_id, reservation.id) != entry["SK"]:
        return None
    if filters.node_ids is not None and reservation.node_id not in filters.node_ids:
        return None
    if not everything and not roles_now(caller.org_id, node, reservation) & filters.roles:
        return None
    if effective_status(reservation, node, now).value not in filters.statuses:
        return None
    if not ends_match(filters, reservation) or not _holds_model(reservation, node, units, filters):
        return None
    return reservation_view(reservation, node, now, reservation.released_unit_ids,
                            reservation.updated_at)  # fmt: skip


def _holds_model(
    reservation: Reservation,
    node: Node,
    units: dict[tuple[str, str], Unit],
    filters: FleetFilters,
) -> bool:
    """``gpuModelId``: a unit of that model among the reservation's, on the node's current
    topology (a unit item the node no longer lists is left over, and does not count)."""
    if filters.gpu_model_id is None:
        return True
    on_node = node.unit_changed_at
    return any(
        (unit := units.get((reservation.node_id, unit_id))) is not None
        and unit.gpu_model_id == filters.gpu_model_id
        and (on_node is None or unit_id in on_node)
        for unit_id in reservation.reserved_unit_ids
    )


def indexed_nodes(org_id: str, ends_after: datetime, index: FleetIndex, now: datetime) -> set[str]:
    """The nodes of every reservation the org's fleet index lists, in any role and status,
    that ends at or after ``ends_after`` or never: from the index's entries alone, no
    reservation read. An entry trails its reservation by seconds, so a node here may hold
    none the org sees any more: who may see what is decided by what reads the node."""
    filters = FleetFilters(roles=ROLES, statuses=ALL_STATUSES, ends_after=ends_after)
    return {node for where in plan(org_id, filters, now) for node in index.entry_nodes(where)}
