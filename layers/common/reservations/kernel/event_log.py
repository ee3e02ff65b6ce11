"""Where an event sits in a feed, and how far a read may go (pure: the clock a parameter).

A feed is a log in the order its items were recorded: an item's position is the moment its
writer wrote it (the writer's clock, to the millisecond), then the event's id. The event's
``time`` is the moment it stands for, which may be much earlier (a relay's backlog pass, an
event derived from another, a late report).

A read stops at the settle window's horizon, ``SETTLE_WINDOW`` before the reader's clock:
an item recorded more recently may still have a slower neighbour being written before it.
A writer whose write took longer than the window (from the position's moment to its answer)
writes the item again at a newer position, with the same id, so that no cursor can have
passed the only copy. ``docs/feeds.md`` says why this is enough.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from reservations.kernel.times import format_event_time, parse_time

SETTLE_WINDOW = timedelta(seconds=5)
# Sorts after every event id: a position "after every item recorded at that millisecond".
_AFTER_EVERY_ID = "~"
_SEPARATOR = "#"


def record_position(recorded_at: datetime, event_id: str) -> str:
    """An item's position: when it was recorded (fixed width, so text order is time
    order), then the event's id (two events recorded in one millisecond both keep theirs)."""
    return f"{format_event_time(recorded_at)}{_SEPARATOR}{event_id}"


def recorded_at(position: str) -> datetime:
    """The moment a position was recorded at."""
    return parse_time(position.split(_SEPARATOR, 1)[0])


def after_instant(moment: datetime) -> str:
    """The position just past every item recorded at ``moment``'s millisecond or before."""
    return f"{format_event_time(moment)}{_SEPARATOR}{_AFTER_EVERY_ID}"


def horizon(now: datetime) -> str:
    """The end of what a read at ``now`` may return (exclusive): every item recorded before
    ``now - SETTLE_WINDOW``'s millisecond. A position itself: a cursor may rest there."""
    return format_event_time(now - SETTLE_WINDOW)


def written_late(position: str, answered_at: datetime) -> bool:
    """Whether the write of an item at ``position``, answered at ``answered_at``, may have
    landed after a reader's horizon passed it: it took the whole window or more."""
    return answered_at - recorded_at(position) >= SETTLE_WINDOW


def just_after(position: str) -> str:
    """The smallest bound above ``position`` that no item's position falls between (an
    inclusive lower bound for "after"): a space sorts below ``#`` and every id character,
    and no position has another as a proper prefix."""
    return position + " "
