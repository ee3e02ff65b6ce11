"""The one timestamp format: RFC 3339 in UTC with a ``Z``, to the second (as the API shows
and the table stores them; an event's time to the millisecond), and the one rule for a time
a client or a file gives: RFC 3339 with an offset, whose UTC value falls within the
years 1970-9999."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator

# RFC 3339 with seconds and an offset; bounded, so a long fraction costs nothing to refuse.
RFC3339 = r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$"
_RFC3339 = re.compile(RFC3339)
# From the Unix epoch (TTLs and epoch seconds start there) to the last year four digits
# write: a time beyond either end has no stored form, and "9999-12-31T23:59:59-01:00" is
# past it in UTC.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
# The last moment a stored time can name.
LAST_MOMENT = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
OUT_OF_RANGE = "must fall within the years 1970-9999 (UTC)"
NOT_RFC3339 = "must be an RFC 3339 date and time with an offset, e.g. 2027-01-01T00:00:00Z"
# Times are kept to the second: a shorter term would be kept as none.
SHORTEST_TERM = timedelta(seconds=1)


def format_time(moment: datetime) -> str:
    """RFC 3339 in UTC with a ``Z``, to the second."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_event_time(moment: datetime) -> str:
    """An event's time: RFC 3339 in UTC with a ``Z``, to the millisecond (fixed width, so
    that the text sorts as the time does)."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def format_moment(moment: datetime) -> str:
    """A termination's times (``requestedAt``, ``terminateAt``): RFC 3339 in UTC with a
    ``Z``, to the millisecond, a whole second written without a fraction (as these times
    were written before they kept milliseconds)."""
    utc = to_millisecond(moment)
    if utc.microsecond == 0:
        return format_time(utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def to_millisecond(moment: datetime) -> datetime:
    """``moment`` in UTC, cut to the millisecond an event's time keeps."""
    utc = moment.astimezone(UTC)
    return utc.replace(microsecond=utc.microsecond // 1000 * 1000)


def parse_time(text: str) -> datetime:
    """A stored time (as :func:`format_time` writes it)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def in_range(moment: datetime) -> datetime:
    """``moment`` (aware) in UTC; ValueError when its UTC value is outside 1970-9999."""
    try:
        utc = moment.astimezone(UTC)
    except OverflowError as error:  # past year 9999, or before year 1, once in UTC
        raise ValueError(OUT_OF_RANGE) from error
    if utc < EARLIEST:
        raise ValueError(OUT_OF_RANGE)
    return utc


def parse_given_time(text: str) -> datetime:
    """A time a client or a file gives, in UTC; ValueError saying what is wrong: not
    RFC 3339 with an offset, not a real date, or outside the years 1970-9999 in UTC."""
    if not _RFC3339.fullmatch(text):
        raise ValueError(NOT_RFC3339)
    try:
        moment = datetime.fromisoformat(text.upper())
    except ValueError as error:  # e.g. February 30th, or hour 24
        raise ValueError("is not a valid date and time") from error
    return in_range(moment)


def _given_time(value: Any) -> Any:
    # A string is read by the one rule; anything else goes on to the strict datetime check,
    # which refuses it (a number is not a time here).
    return parse_given_time(value) if isinstance(value, str) else value


# A pydantic field holding a given time: the rule above, its message naming the field.
GivenTime = Annotated[datetime, BeforeValidator(_given_time)]


def term_problem(starts_at: datetime, ends_at: datetime) -> str | None:
    """What is wrong with ``endsAt`` for a term from ``starts_at`` to ``ends_at``, or None:
    it must come after the start, by at least a second (times are kept to the second)."""
    if ends_at <= starts_at:
        return "must be after startsAt"
    if ends_at - starts_at < SHORTEST_TERM:
        return "must be at least 1 second after startsAt (times are kept to the second)"
    return None
