"""``GET /v1/nodes/{nodeId}/reservations/{id}`` and ``GET /v1/nodes/{nodeId}/reservations``:
reservations as a caller may see them.

One reservation is one BatchGetItem (the node, the reservation and its history key). A list
page is one Query over the ``RES#`` sort keys from the cursor on — of the node's partition when
the filter asks only for live statuses, else of the index that holds the node's partition's
reservations and its history in one order — up to the node's list access item, which
sorts last and so comes with every page: who may list, and whether they see every
reservation or those naming their org, is decided on each page from it, never carried in
the cursor, and the page's effective statuses are derived from the unit generations it
keeps (no read of the node item). The status filter is applied in code, and the page stops
at ``limit`` matches.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from reservations.kernel.caller import Caller
from reservations.kernel.cursors import (
    Cursor,
    CursorScope,
    decode_cursor,
    encode_cursor,
    page_limit,
)
from reservations.kernel.errors import FieldProblem, InvalidRequest, NotFound
from reservations.kernel.ids import is_resource_id
from reservations.lifecycle.models import ReservationPage, ReservationView
from reservations.lifecycle.rules.access import (
    may_list_reservations,
    may_read_reservation,
    sees_every_reservation,
)
from reservations.lifecycle.views import reservation_view
from reservations.nodes import (
    READ,
    ListAccess,
    NodeSnapshot,
    Reservation,
    ReservationReader,
    ReservationStatus,
    UnitGenerations,
    effective_status,
)

# A list asking only for these reads the node's partition alone: no reservation in the
# node's history can have them (it ended), and one that ended but has not moved yet is
# filtered out by its effective status like any other.
LIVE_STATUSES = frozenset(
    status.value
    for status in (
        ReservationStatus.PENDING,
        ReservationStatus.ACTIVE,
        ReservationStatus.NEEDS_REVIEW,
    )
)


@dataclass(frozen=True)
class ListQuery:
    """The list's query string as it came: every part optional, each checked here; a part
    given empty (``status=``) is absent."""

    limit: str | None = None
    cursor: str | None = None
    status: str | None = None


def get_reservation(
    caller: Caller, node_id: str, reservation_id: str, reader: ReservationReader, now: datetime
) -> ReservationView:
    """The reservation; the same 404 for unknown, malformed and not visible."""
    if not (is_resource_id(node_id) and is_resource_id(reservation_id) and caller.has(READ)):
        raise NotFound()
    node, reservation = reader.load_reservation(node_id, reservation_id)
    if node is None or reservation is None or not reservation.retained_at(now):
        raise NotFound()
    if not may_read_reservation(caller, NodeSnapshot(node), reservation):
        raise NotFound()
    return _view(reservation, node, now)


def list_reservations(
    caller: Caller,
    node_id: str,
    query: ListQuery,
    reader: ReservationReader,
    cursor_key: bytes,
    now: datetime,
) -> ReservationPage:
    """A page of the node's reservations the caller may see, sorted by id; 404 when it may
    see none of them (never an empty first page for a stranger)."""
    if not is_resource_id(node_id) or not caller.has(READ):
        raise NotFound()
    limit, statuses = page_limit(query.limit), _statuses(query.status or None)
    scope = CursorScope(node_id, ",".join(sorted(statuses)), caller.org_id)
    cursor = decode_cursor(query.cursor, scope, cursor_key) if query.cursor else None
    with_history = not statuses or not statuses <= LIVE_STATUSES
    after = cursor.after if cursor else None
    # The operator's (and, as the Query reads them, the owner's) pages read a bounded
    # window; anyone else's as much as one Query holds (it may see few of them).
    window = limit if caller.platform_operator else None
    while True:
        read = reader.reservation_page(node_id, after, with_history, window)
        access = _listed_by(caller, read.access, now)
        sees_all = sees_every_reservation(caller, access)
        matches = [
            r
            for r in read.reservations
            if r.retained_at(now)
            and (sees_all or _names(r, caller.org_id))
            and (not statuses or effective_status(r, access, now).value in statuses)
        ]
        page = matches[:limit]
        after = page[-1].id if len(matches) > limit else None
        if after is None and read.more and read.reservations:
            after = read.reservations[-1].id  # the Query stopped early: go on after it
        if page or after is None:
            break  # never an empty page while there is a next one: read on
    next_cursor = encode_cursor(Cursor(after), scope, cursor_key) if after else None
    return ReservationPage(items=[_view(r, access, now) for r in page], next_cursor=next_cursor)


def _listed_by(caller: Caller, access: ListAccess | None, now: datetime) -> ListAccess:
    """The node's list access, read with this page; the 404 when the node is unknown or the
    caller may list none of its reservations still readable."""
    if access is None or not may_list_reservations(caller, access, now):
        raise NotFound()
    return access


def _names(reservation: Reservation, org_id: str) -> bool:
    return org_id in reservation.managing_org_ids or org_id in reservation.allowed_org_ids


def _view(reservation: Reservation, node: UnitGenerations, now: datetime) -> ReservationView:
    released, updated_at = reservation.released_unit_ids, reservation.updated_at
    return reservation_view(reservation, node, now, released, updated_at)


def _statuses(text: str | None) -> frozenset[str]:
    """Comma-separated effective statuses; an unknown one is a 400 naming ``status``."""
    if text is None:
        return frozenset()
    names = [name.strip(" ") for name in text.split(",")]
    known = {status.value for status in ReservationStatus}
    if unknown := [name for name in names if name not in known]:
        raise InvalidRequest(
            f"status must be a comma-separated list of {', '.join(sorted(known))}",
            [FieldProblem("status", f"unknown status {unknown[0][:40]!r}")],
        )
    return frozenset(names)
