"""The one timestamp format: RFC 3339 in UTC with a ``Z``, to the second (as the API shows
and the table stores them)."""

from __future__ import annotations

from datetime import UTC, datetime


def format_time(moment: datetime) -> str:
    """RFC 3339 in UTC with a ``Z``, to the second."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
