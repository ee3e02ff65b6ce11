"""``GET /v1/usage``'s query, checked (pure): the period on whole UTC hours or days and
within its longest span, the granularity, the grouping, the keys it names, and a page's
limit. Anything else is a 400 naming the field."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

from reservations.kernel.cursors import page_limit
from reservations.kernel.errors import FieldProblem, InvalidRequest
from reservations.kernel.ids import is_resource_id
from reservations.kernel.times import parse_given_time
from reservations.usage.rules.facts import to_ms
from reservations.usage.rules.rows import PERIOD_MS, Granularity

# The most keys of each kind a query names.
MAX_KEYS = 50
# The longest period a query spans, by granularity, in days.
MAX_DAYS = {Granularity.HOUR: 31, Granularity.DAY: 400}
_DAY_MS = 86_400_000
E = TypeVar("E", bound=StrEnum)


class GroupBy(StrEnum):
    NODE = "node"
    RESERVATION = "reservation"


@dataclass(frozen=True)
class UsageQuery:
    """The query string as it came; each part optional here, each checked by :func:`parse`."""

    from_: str | None = None
    to: str | None = None
    granularity: str | None = None
    group_by: str | None = None
    node_id: str | None = None
    reservation_id: str | None = None
    limit: str | None = None
    cursor: str | None = None


@dataclass(frozen=True)
class UsageFilters:
    """A checked query: ``[start, end)`` in ms, and the keys named (None: any)."""

    start: int
    end: int
    granularity: Granularity
    group_by: GroupBy
    node_ids: tuple[str, ...] | None
    reservation_ids: frozenset[str] | None
    limit: int

    def canonical(self) -> str:
        """What binds a cursor to this query (besides the org): every part but the limit."""
        nodes = ",".join(self.node_ids) if self.node_ids is not None else "*"
        reservations = ",".join(sorted(self.reservation_ids or ())) or "*"
        return "|".join(
            (str(self.start), str(self.end), self.granularity.value, self.group_by.value,
             nodes, reservations)
        )  # fmt: skip


def bad(field: str, problem: str) -> InvalidRequest:
    return InvalidRequest(f"{field} {problem}", [FieldProblem(field, problem)])


def parse(query: UsageQuery) -> UsageFilters:
    """The query checked; a 400 naming the first field that is wrong."""
    granularity = _enum("granularity", query.granularity, Granularity, Granularity.DAY)
    group_by = _enum("groupBy", query.group_by, GroupBy, GroupBy.NODE)
    start = _boundary("from", query.from_, granularity)
    end = _boundary("to", query.to, granularity)
    if end <= start:
        raise bad("to", "must be after from")
    if end - start > MAX_DAYS[granularity] * _DAY_MS:
        days = MAX_DAYS[granularity]
        raise bad("to", f"must be at most {days} days after from for granularity {granularity}")
    node_ids = _ids("nodeId", query.node_id)
    reservation_ids = _ids("reservationId", query.reservation_id)
    if reservation_ids is not None and group_by is not GroupBy.RESERVATION:
        raise bad("reservationId", "is only taken with groupBy=reservation")
    return UsageFilters(
        start=start,
        end=end,
        granularity=granularity,
        group_by=group_by,
        node_ids=tuple(sorted(set(node_ids))) if node_ids is not None else None,
        reservation_ids=frozenset(reservation_ids) if reservation_ids is not None else None,
        limit=page_limit(query.limit),
    )


def _enum(field: str, text: str | None, kind: type[E], default: E) -> E:
    if not text:
        return default
    try:
        return kind(text)
    except ValueError:
        known = ", ".join(member.value for member in kind)
        raise bad(field, f"must be one of {known}") from None


def _boundary(field: str, text: str | None, granularity: Granularity) -> int:
    """An RFC 3339 time on a whole UTC period of ``granularity``, in ms."""
    if not text:
        raise bad(field, "is required (RFC 3339)")
    try:
        moment = to_ms(parse_given_time(text))
    except ValueError as error:
        raise bad(field, str(error)) from None
    if moment % PERIOD_MS[granularity]:
        raise bad(field, f"must be a whole UTC {granularity.value} (granularity {granularity})")
    return moment


def _ids(field: str, text: str | None) -> list[str] | None:
    if not text:
        return None
    ids = [part.strip(" ") for part in text.split(",")]
    if len(ids) > MAX_KEYS:
        raise bad(field, f"names more than {MAX_KEYS} ids")
    if malformed := [i for i in ids if not is_resource_id(i)]:
        raise bad(field, f"has a malformed id {malformed[0][:40]!r}")
    return ids
