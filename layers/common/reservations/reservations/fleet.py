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

from dataclasses import dataclass
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
from reservations.nodes import (
    FLEET_PLATFORM,
    READ,
    Node,
    Reservation,
    ReservationView,
    Unit,
    effective_status,
    fleet_sk,
    reservation_view,
)
from reservations.reservations.models import FleetReservationPage
from reservations.reservations.rules.fleet import (
    Entry,
    FleetFilters,
    Range,
    ends_match,
    may_hold_model,
    parse_filters,
    plan,
    roles_now,
)
from reservations.reservations.table.fleet import EntriesRead, Found

# What binds a fleet list's cursor to this list (no event feed or node list has it).
FLEET_FEED = "/fleet"
# Index reads a page makes to fill itself once it has an item.
MAX_ROUNDS = 5
# The most entries one index read takes: a page that found nothing yet reads on in reads
# four times larger each (entries are small; the reservations are read a page at a time).
MAX_INDEX_READ = 1000


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
    def entries(self, where: Range, after: str | None, limit: int) -> EntriesRead: ...

    def read(self, entries: list[Entry]) -> Found: ...

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
    items: list[ReservationView] = []
    more, rounds, size = bool(ranges), 0, limit
    # A filter the index cannot serve (a role, a status) may skip much of what it finds:
    # a page reads on to fill itself, but after a few rounds answers what it has (never an
    # empty page with a cursor: an empty one reads on to the end, each index read larger).
    while more and len(items) < limit and not (items and rounds >= MAX_ROUNDS):
        rounds += 1
        entries, more = _next_entries(index, ranges, position, size)
        for chunk in _chunks(entries, limit):
            if len(items) == limit:
                more = True
                break
            shown = _read_chunk(chunk, index, caller, filters, everything, now, limit - len(items))
            items += shown.items
            position = shown.position or position
            more = more or shown.stopped
        size = limit if items else min(MAX_INDEX_READ, size * 4)
    cursor = encode_cursor(Cursor(position), scope, cursor_key) if more and position else None
    return FleetReservationPage(items=items, next_cursor=cursor)


@dataclass(frozen=True)
class _Shown:
    """What one chunk of entries gave: its items, the last entry taken, whether it
    stopped with entries left (the page full)."""

    items: list[ReservationView]
    position: str | None
    stopped: bool


def _chunks(entries: list[Entry], size: int) -> list[list[Entry]]:
    return [entries[start : start + size] for start in range(0, len(entries), size)]


def _read_chunk(
    chunk: list[Entry],
    index: FleetIndex,
    caller: Caller,
    filters: FleetFilters,
    everything: bool,
    now: datetime,
    room: int,
) -> _Shown:
    """The chunk's reservations the caller may see, read fresh (at most ``room`` of them):
    an entry the filters rule out by what it keeps (its node, its units' models) is not
    read."""
    wanted = [e for e in chunk if _may_match(e, filters)]
    found = index.read(wanted) if wanted else Found({}, {})
    units = _units(index, found, filters)
    items: list[ReservationView] = []
    position = None
    for entry in chunk:
        if len(items) == room:
            return _Shown(items, position, True)
        position = str(entry["SK"])
        view = _shown(entry, found, units, caller, filters, everything, now)
        if view is not None:
            items.append(view)
    return _Shown(items, position, False)


def _may_match(entry: Entry, filters: FleetFilters) -> bool:
    nodes = filters.node_ids
    return (nodes is None or entry["nodeId"] in nodes) and may_hold_model(
        entry, filters.gpu_model_id
    )


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
    index: FleetIndex, ranges: list[Range], position: str | None, size: int
) -> tuple[list[Entry], bool]:
    """The next ``size`` entries after ``position`` over the ranges, merged in sort-key
    order (one Query a range), and whether any are left: with two ranges, only what sorts
    before the end of what each read is sure to be next."""
    reads = []
    for where in ranges:
        # "!" sorts below every character an id may have: just after ``position``.
        low = max(where.low, position + "!") if position is not None else where.low
        if low <= where.high:
            # One more than it takes: a page that ends the index says so (no cursor
            # to an empty page).
            reads.append(index.entries(Range(where.pk, low, where.high), None, size + 1))
    merged = sorted((e for read in reads for e in read.entries), key=lambda e: str(e["SK"]))
    ends = [str(read.entries[-1]["SK"]) for read in reads if read.more and read.entries]
    bound = min(ends, default=None)
    sure = [e for e in merged if bound is None or str(e["SK"]) <= bound]
    return sure[:size], len(sure) > size or bound is not None


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
