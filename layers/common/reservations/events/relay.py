"""The relay: every committed event reaches every outlet at least once, however long an
outlet is down.

An event is born marked (unrelayed) in its change's own transaction. Two relays take it on:

- the stream relay, right after the commit, for the events of a DynamoDB Stream batch;
- the scheduled relay, every minute, for every event still marked after a grace period
  (a stream that gave up, a crash, an outlet down for longer than the stream keeps
  records: 24 hours).

Each outlet (the org feeds, the bus; webhook deliveries are queued by a third, next to
them) takes the events it still owes, on its own: the bus being down does not hold the
feeds back. An event records the outlets it reached, and leaves the mark once it reached
them all. Outlets are idempotent (the feeds are written under the same keys, the bus's
subscribers deduplicate by id), so a crash anywhere, or a record relayed twice, delivers
again and loses nothing.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from aws_lambda_powertools.metrics import MetricUnit

from reservations.events.models import PendingEvent, UnreadableEvent
from reservations.events.ports import Outlet, UnrelayedEvents
from reservations.kernel.observability import logger, metrics
from reservations.kernel.times import format_event_time

# Events relayed together by the scheduled relay (a page of its index Query).
BACKLOG_PAGE = 25
# Left for one page's worst case (its feed writes, bus puts and marks, each bounded) before
# the invocation's end: with less, the pass stops and the next one goes on.
PAGE_RESERVE_SECONDS = 20.0


@dataclass(frozen=True)
class RelayResult:
    """The events that reached every outlet, those that still owe one, and the outlets that
    took none of the events they were given (down, as far as this relay can tell)."""

    relayed: frozenset[str]
    failed: frozenset[str]
    down: frozenset[str] = frozenset()


def relay(
    pending: Sequence[PendingEvent],
    outlets: Sequence[Outlet],
    marks: UnrelayedEvents,
    down: frozenset[str] = frozenset(),
) -> RelayResult:
    """Each outlet takes the events that still owe it (those in ``down`` are not asked: they
    failed earlier in the same pass); each event records what it reached."""
    undelivered: dict[str, set[str]] = {}
    for outlet in outlets:
        owing = [p.stored for p in pending if outlet.name not in p.relayed_to]
        if outlet.name in down:
            undelivered[outlet.name] = {stored.id for stored in owing}
        elif owing:
            undelivered[outlet.name] = outlet.deliver(owing)
            if len(undelivered[outlet.name]) == len(owing):
                down |= {outlet.name}
        else:
            undelivered[outlet.name] = set()
    relayed: set[str] = set()
    failed: set[str] = set()
    for event in pending:
        owed = [o.name for o in outlets if o.name not in event.relayed_to]
        reached = frozenset(name for name in owed if event.stored.id not in undelivered[name])
        done = len(reached) == len(owed)
        if (reached or done) and not marks.settle(event.stored, reached, done):
            done = False  # not recorded: it stays marked, and goes out again
        (relayed if done else failed).add(event.stored.id)
    _count(undelivered, relayed, failed)
    return RelayResult(frozenset(relayed), frozenset(failed), down)


def relay_stream(
    pending: Sequence[PendingEvent], outlets: Sequence[Outlet], marks: UnrelayedEvents
) -> RelayResult:
    """The events of a stream batch, as their marks stand now: a batch handed over again
    (the stream retries from a failure, a replay) delivers only what is still owed."""
    return relay(marks.current(pending), outlets, marks)


def _count(undelivered: dict[str, set[str]], relayed: set[str], failed: set[str]) -> None:
    if relayed:
        metrics.add_metric(name="EventsRelayed", unit=MetricUnit.Count, value=len(relayed))
    if failed:
        metrics.add_metric(name="EventsRelayFailed", unit=MetricUnit.Count, value=len(failed))
        logger.warning(
            "events not relayed everywhere yet; they stay marked",
            extra={
                "eventIds": sorted(failed)[:20],
                "undelivered": {name: len(ids) for name, ids in undelivered.items() if ids},
            },
        )


@dataclass
class _Pass:
    """One backlog pass as it goes: what it counted, the outlets found down, the oldest."""

    outlets: Sequence[Outlet]
    marks: UnrelayedEvents
    time_left: Callable[[], float]
    counts: Counter[str] = field(default_factory=Counter)
    down: frozenset[str] = frozenset()
    oldest: datetime | None = None

    def relay_page(self, page: list[PendingEvent]) -> bool:
        """Relay one page; False when the pass should stop here (the invocation is ending,
        or every outlet is down)."""
        if self.time_left() < PAGE_RESERVE_SECONDS:
            self.counts["deferred"] += len(page)
            return False
        if len(self.down) == len(self.outlets):
            return False
        result = relay(page, self.outlets, self.marks, self.down)
        self.down = result.down
        self.counts["relayed"] += len(result.relayed)
        self.counts["failed"] += len(result.failed)
        return True


def relay_backlog(
    now: datetime,
    grace: timedelta,
    marks: UnrelayedEvents,
    outlets: Sequence[Outlet],
    time_left: Callable[[], float] = lambda: math.inf,
) -> Counter[str]:
    """One pass of the scheduled relay over the events still marked ``grace`` after their
    time, oldest first, a page at a time. An outlet that takes none of a page's events is
    not asked again in this pass (the next pass tries it again), but the others go on: the
    bus's outage holds no org feed back. The pass ends with the invocation, or once every
    outlet is down (an outage of everything costs one page a pass). Counts ``relayed``,
    ``failed``, ``deferred``, ``unreadable``, and the oldest pending event's age."""
    run = _Pass(outlets, marks, time_left)
    page: list[PendingEvent] = []
    for pending in marks.unrelayed(format_event_time(now - grace), BACKLOG_PAGE):
        if isinstance(pending, UnreadableEvent):
            _unreadable(pending, run.counts)
            continue
        run.oldest = run.oldest or pending.stored.event.time
        page.append(pending)
        if len(page) == BACKLOG_PAGE:
            if not run.relay_page(page):
                break
            page = []
    else:
        if page:
            run.relay_page(page)
    age = (now - run.oldest).total_seconds() if run.oldest else 0.0
    metrics.add_metric(name="EventsOldestPendingSeconds", unit=MetricUnit.Seconds, value=age)
    run.counts["oldest_pending_seconds"] = int(age)
    return run.counts


def _unreadable(item: UnreadableEvent, counts: Counter[str]) -> None:
    """Skipped (it can never be relayed), loudly: a writer wrote what is not an event."""
    logger.error("unreadable event item skipped", extra={"key": item.key, "problem": item.problem})
    metrics.add_metric(name="EventsUnreadable", unit=MetricUnit.Count, value=1)
    counts["unreadable"] += 1
