"""The one clock the functions read (tests pass their own ``now`` to the rules instead)."""

from datetime import UTC, datetime


def utc_now() -> datetime:
    return datetime.now(UTC)
