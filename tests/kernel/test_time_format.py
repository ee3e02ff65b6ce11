"""The one timestamp format: RFC 3339 in UTC with a ``Z``, to the second (an event's to
the millisecond, cut, not rounded), and every time read back in UTC, whatever zone the host
the code runs on is set to (Lambda's is UTC; a laptop's, a CI runner's may not be)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone

import pytest

from reservations.kernel.clock import utc_now
from reservations.kernel.times import (
    format_event_time,
    format_time,
    in_range,
    parse_time,
    to_millisecond,
)

pytestmark = pytest.mark.disable_socket


@pytest.fixture
def host_in_another_zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "IST-5:30")  # POSIX: UTC+05:30, no zone files needed
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("host_in_another_zone")
def test_times_are_written_and_read_in_utc_whatever_the_hosts_zone():
    moment = datetime(2026, 11, 29, 12, 0, 0, 999_500, tzinfo=UTC)
    assert format_time(moment) == "2026-11-29T12:00:00Z"
    assert format_event_time(moment) == "2026-11-29T12:00:00.999Z"
    assert to_millisecond(moment).isoformat() == "2026-11-29T12:00:00.999000+00:00"
    assert parse_time("2026-11-29T12:00:00Z").isoformat() == "2026-11-29T12:00:00+00:00"
    two_hours_east = datetime(2026, 11, 29, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    assert in_range(two_hours_east).isoformat() == "2026-11-29T12:00:00+00:00"
    assert utc_now().utcoffset() == timedelta(0)


def test_an_events_time_is_cut_not_rounded_to_the_millisecond():
    for micro, cut in ((1_000, 1_000), (999_999, 999_000), (123_456, 123_000)):
        moment = datetime(2026, 11, 29, 12, 0, 0, micro, tzinfo=UTC)
        assert to_millisecond(moment) == moment.replace(microsecond=cut), micro
