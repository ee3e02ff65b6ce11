"""``GET /v1/usage``: the usage rows the caller may see, by key (node, then reservation), then
period.

A node's rows come from one fold of its events (``rules/ledger.py``) up to the watermark
``asOf``: the present less the feeds' settle window. Every change writes its event in its
own transaction, to the node's feed that the fold reads (by time, through the EventsByTime
index), and nearly every write commits within that window after its event's time: so the
changes before ``asOf`` are counted, whether or not the relay has passed them on yet (the
events recorded later than their time, the clock's and the reviews a node update derives,
are ones the fold does not need: it finds their moments itself). A change that may have
reached a row after it was final restates it: ``rules/revisions.py``.

The fold starts at the node's latest checkpoint at or before the page's first period
(``checkpoints.py``: the start of an hour, kept by the relay) and reads the events from
there to the page's last period's end: what a page reads grows with its periods and the
changes in them, and at most about an hour before them, never with the node's past.

Who sees what is decided when read, from the node's list access and its reservations as
they are now: the operator everything; a node's owner its node's rows and those of every
reservation on it; a reservation's managers and audience that reservation's rows. A row
the caller may not see is absent, as if its key did not exist. By reservation, the fold
says which reservations governed a unit in the page's periods, and only those are read
(by id, live or in the node's history): never the node's other reservations."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from reservations.kernel.caller import Caller
from reservations.kernel.cursors import Cursor, CursorScope, decode_cursor, encode_cursor
from reservations.kernel.errors import NotFound
from reservations.kernel.event_log import SETTLE_WINDOW
from reservations.nodes import Reservation, ReservationReader, named_at, runs_the_node
from reservations.usage.models import UsagePage, UsageRow
from reservations.usage.ports import NodeHistory, OrgNodes
from reservations.usage.rules import rows as usage_rows
from reservations.usage.rules.facts import from_ms, to_ms
from reservations.usage.rules.ledger import NodeLedger
from reservations.usage.rules.query import GroupBy, UsageFilters, UsageQuery, parse
from reservations.usage.rules.revisions import folded
from reservations.usage.rules.rows import Granularity

USAGE_READ = "usage.read"
# What binds a usage page's cursor to usage (no list or feed has it).
USAGE_FEED = "/usage"


@dataclass(frozen=True)
class UsageReads:
    """Where a page's rows come from: the nodes' events, their reservations (with the
    node's list access), and the nodes an org owns or has reservations on."""

    history: NodeHistory
    reservations: ReservationReader
    org_nodes: OrgNodes


def list_usage(
    caller: Caller, query: UsageQuery, reads: UsageReads, cursor_key: bytes, now: datetime
) -> UsagePage:
    """A page of the rows the caller may see; a 404 only for a key without ``usage.read``."""
    if not caller.has(USAGE_READ):
        raise NotFound()
    filters = parse(query)
    scope = CursorScope("", filters.canonical(), caller.org_id, USAGE_FEED)
    after = _after(decode_cursor(query.cursor, scope, cursor_key).after if query.cursor else "")
    as_of = to_ms(now - SETTLE_WINDOW)
    first_node = after[0]  # the nodes before it are wholly before the cursor
    node_ids: Iterable[str]
    if filters.node_ids is not None:
        node_ids = sorted(node for node in filters.node_ids if node >= first_node)
    else:
        by_reservation = filters.group_by is GroupBy.RESERVATION
        node_ids = reads.org_nodes(caller, from_ms(filters.start), first_node, by_reservation)
    found: list[usage_rows.UsageRow] = []
    for node_id in node_ids:
        found += (row for row in _visible(caller, node_id, filters, reads, as_of, now)
                  if _place(row) > after)  # fmt: skip
        if len(found) > filters.limit:
            break
    page, rest = found[: filters.limit], found[filters.limit :]
    cursor = encode_cursor(Cursor(_just_before(rest[0])), scope, cursor_key) if rest else None
    return UsagePage(items=[UsageRow(**usage_rows.answer(row)) for row in page],
                     next_cursor=cursor)  # fmt: skip


def _place(row: usage_rows.UsageRow) -> tuple[str, str, int]:
    """A row's place in the answer's order: node, reservation (none first), start."""
    return row.key.node_id, row.key.reservation_id or "", row.start


def _just_before(row: usage_rows.UsageRow) -> str:
    """The cursor's text for the place just before ``row`` (a period starts on a whole hour,
    so a millisecond before its start is no row's): the next page starts at ``row``, and
    at its node. Ids hold no "/"."""
    return f"{row.key.node_id}/{row.key.reservation_id or ''}/{row.start - 1:015d}"


def _after(text: str) -> tuple[str, str, int]:
    """The place a cursor's text names (nothing: before every row)."""
    if not text:
        return "", "", -1
    node_id, reservation_id, start = text.split("/")
    return node_id, reservation_id, int(start)


def _visible(
    caller: Caller,
    node_id: str,
    filters: UsageFilters,
    reads: UsageReads,
    as_of: int,
    now: datetime,
) -> list[usage_rows.UsageRow]:
    """The node's rows the query asks for and the caller may see (none, and no fold, when
    its list access says it may see none of them)."""
    access = reads.reservations.list_access(node_id)
    if access is None:
        return []
    runs = runs_the_node(caller, access.owner_org_id)
    if filters.group_by is GroupBy.NODE:
        if not runs:
            return []
        return _rows(reads.history, node_id, filters, as_of, usage_rows.node_rows)
    if not runs and caller.org_id not in named_at(access.named_until, now):
        return []
    rows = _rows(reads.history, node_id, filters, as_of, usage_rows.reservation_rows)
    governed = {row.key.reservation_id for row in rows if row.key.reservation_id}
    if filters.reservation_ids is not None:
        governed &= filters.reservation_ids
    seen = {r.id for r in reads.reservations.load_reservations(node_id, governed)
            if r.retained_at(now) and (runs or _names(r, caller.org_id))}  # fmt: skip
    return [row for row in rows if row.key.reservation_id in seen]


def _rows(
    history: NodeHistory,
    node_id: str,
    filters: UsageFilters,
    as_of: int,
    rows_of: Callable[[NodeLedger, Granularity, int, int], list[usage_rows.UsageRow]],
) -> list[usage_rows.UsageRow]:
    """The node's rows for the query's periods, each at its revision (``rules/revisions.py``):
    folded from its latest checkpoint at or before the first period (and before ``as_of``),
    with the events from there to the last period's end (those after it change no row of
    the page)."""
    carried = history.checkpoint(node_id, min(filters.start, as_of - 1))
    events = history.node_history(node_id, carried.at if carried else None, filters.end)
    granularity, start, end = filters.granularity, filters.start, filters.end

    def rows(ledger: NodeLedger) -> list[usage_rows.UsageRow]:
        return rows_of(ledger, granularity, start, end)

    return folded(node_id, events, as_of, granularity, rows, since=carried)


def _names(reservation: Reservation, org_id: str) -> bool:
    named: Iterable[str] = (*reservation.managing_org_ids, *reservation.allowed_org_ids)
    return org_id in named
