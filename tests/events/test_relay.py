"""The relay over in-memory fakes: every event reaches every outlet at least once, a crash
mid-fan-out neither loses nor duplicates, and an outage of any length only delays."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest

from reservations.events.models import PendingEvent, UnreadableEvent
from reservations.events.relay import BACKLOG_PAGE, relay, relay_backlog
from reservations.events.rules.visibility import feed_org_ids
from reservations.kernel.observability import metrics
from reservations.workloads.rules import events as workloads_events
from tests.support import event_scenario as s
from tests.support.event_fakes import PLATFORM, CrashingFeeds, Down, FakeBus, FakeEvents, FakeFeeds

pytestmark = pytest.mark.disable_socket

GRACE = timedelta(seconds=60)


def committed(table: FakeEvents, count: int = 14) -> list[PendingEvent]:
    """Events as their writes leave them: in the node feed, marked. Up to 14: one of each
    type; more: as many placements."""
    events = s.every_type()[:count]
    if count > len(events):
        events = [
            workloads_events.workload_placed(s.context(n), s.VM_1) for n in range(1, count + 1)
        ]
    return [PendingEvent(table.commit(stored)) for stored in events]


def feed_contents(table: FakeEvents) -> dict[str | None, list[str]]:
    return {org: sorted(s.id for s in feed.values()) for org, feed in table.org_feeds.items()}


def expected_feeds(events: list[PendingEvent]) -> dict[str | None, list[str]]:
    feeds: dict[str | None, list[str]] = {}
    for pending in events:
        for org in [PLATFORM, *feed_org_ids(pending.stored)]:
            feeds.setdefault(org, []).append(pending.stored.id)
    return {org: sorted(ids) for org, ids in feeds.items()}


def test_a_relay_puts_each_event_in_every_feed_that_may_see_it_and_on_the_bus():
    table, bus = FakeEvents(), FakeBus()
    pending = committed(table)
    result = relay(pending, [FakeFeeds(table), bus], table)
    assert result.relayed == {p.stored.id for p in pending}
    assert not result.failed
    assert feed_contents(table) == expected_feeds(pending)
    assert sorted(bus.received) == sorted(p.stored.id for p in pending)
    assert table.marked == {}  # every event reached every outlet


def test_a_crash_after_half_the_org_writes_loses_nothing_and_writes_nothing_twice():
    table, bus = FakeEvents(), FakeBus()
    pending = committed(table)
    writes = sum(len(feed_org_ids(p.stored)) + 1 for p in pending)
    with pytest.raises(Down):
        relay(pending, [CrashingFeeds(table, crash_after=writes // 2), bus], table)
    assert 0 < sum(len(f) for f in table.org_feeds.values()) < writes
    assert len(table.marked) == len(pending)  # nothing settled: every event still owed
    # The stream retries the batch (or the scheduled relay finds them): same keys again.
    again = [table.pending_of(p.stored) for p in pending]
    relay(again, [FakeFeeds(table), bus], table)
    assert feed_contents(table) == expected_feeds(pending)  # each event once per feed
    assert sum(len(f) for f in table.org_feeds.values()) == writes
    assert sorted(bus.received) == sorted(p.stored.id for p in pending)
    assert table.marked == {}


def test_the_bus_down_does_not_hold_the_feeds_back_and_they_are_not_written_again():
    table, bus = FakeEvents(), FakeBus(down=True)
    feeds = FakeFeeds(table)
    pending = committed(table, 3)
    result = relay(pending, [feeds, bus], table)
    assert result.failed == {p.stored.id for p in pending}
    assert feed_contents(table) == expected_feeds(pending)
    assert all(table.pending_of(p.stored).relayed_to == {"feeds"} for p in pending)
    writes = feeds.writes
    bus.down = False
    relay([table.pending_of(p.stored) for p in pending], [feeds, bus], table)
    assert feeds.writes == writes  # the feeds were done: only the bus was owed
    assert sorted(bus.received) == sorted(p.stored.id for p in pending)
    assert table.marked == {}


def test_the_bus_down_for_a_day_then_every_event_arrives():
    table, bus = FakeEvents(), FakeBus(down=True)
    feeds = FakeFeeds(table)
    pending = committed(table, 60)
    relay(pending[:25], [feeds, bus], table)  # the stream's relay, for some, during the outage
    now = s.T0
    for minute in range(24 * 60):  # the scheduled relay, every minute for a day
        now = s.T0 + timedelta(minutes=minute + 2)
        relay_backlog(now, GRACE, table, [feeds, bus])
    assert bus.received == []
    assert len(table.marked) == 60
    # The feeds were written for every event at once, whatever the bus: only the bus is owed.
    assert feed_contents(table) == expected_feeds(pending)
    assert {p.relayed_to for p in table.marked.values()} == {frozenset({"feeds"})}
    # A pass asks a down outlet once (its first page), not once a page.
    assert bus.calls == 1 + 24 * 60
    bus.down = False
    counts = relay_backlog(now + timedelta(minutes=1), GRACE, table, [feeds, bus])
    assert counts["relayed"] == 60
    assert sorted(set(bus.received)) == sorted(p.stored.id for p in pending)
    assert len(bus.received) == 60
    assert table.marked == {}
    assert feed_contents(table) == expected_feeds(pending)


def test_with_every_outlet_down_a_pass_costs_one_page():
    table, bus = FakeEvents(), FakeBus(down=True)
    feeds = FakeFeeds(table, fail_after=0)
    committed(table, BACKLOG_PAGE * 3)
    counts = relay_backlog(s.T0 + timedelta(days=1), GRACE, table, [feeds, bus])
    assert counts["failed"] == BACKLOG_PAGE
    assert bus.calls == 1
    assert feeds.writes == 0
    assert len(table.marked) == BACKLOG_PAGE * 3


def test_the_scheduled_relay_leaves_new_events_to_the_stream_for_the_grace_period():
    table, bus = FakeEvents(), FakeBus()
    pending = committed(table, 3)
    newest = max(p.stored.event.time for p in pending)
    counts = relay_backlog(
        newest + GRACE - timedelta(seconds=2), GRACE, table, [FakeFeeds(table), bus]
    )
    assert counts["relayed"] == 1  # only the first event is older than the grace period
    assert counts["oldest_pending_seconds"] == 60


def test_a_pass_stops_before_the_invocations_end():
    table, bus = FakeEvents(), FakeBus()
    committed(table, BACKLOG_PAGE * 3)
    left = iter([100.0, 100.0, 5.0])
    counts = relay_backlog(
        s.T0 + timedelta(days=1),
        GRACE,
        table,
        [FakeFeeds(table), bus],
        time_left=lambda: next(left),
    )
    assert counts["relayed"] == 2 * BACKLOG_PAGE
    assert counts["deferred"] == BACKLOG_PAGE
    assert len(table.marked) == BACKLOG_PAGE


def test_an_unrecorded_settle_leaves_the_event_marked_and_it_goes_out_again():
    table, bus = FakeEvents(settle_fails=True), FakeBus()
    pending = committed(table, 2)
    result = relay(pending, [FakeFeeds(table), bus], table)
    assert result.failed == {p.stored.id for p in pending}
    table.settle_fails = False
    relay_backlog(s.T0 + timedelta(days=1), GRACE, table, [FakeFeeds(table), bus])
    assert table.marked == {}
    assert Counter(bus.received) == Counter({p.stored.id: 2 for p in pending})  # at least once


def test_an_unreadable_item_is_skipped_and_counted_not_a_block_on_the_rest(caplog):
    table, bus = FakeEvents(), FakeBus()
    committed(table, 2)
    table.unreadable.append(UnreadableEvent("NODEEVT#node-a x", "KeyError('event')"))
    table.unreadable.append(UnreadableEvent("NODEEVT#node-a y", "ValueError('time')"))
    metrics.clear_metrics()
    caplog.set_level("INFO", logger="reservations")
    counts = relay_backlog(s.T0 + timedelta(days=1), GRACE, table, [FakeFeeds(table), bus])
    assert counts["unreadable"] == 2
    assert counts["relayed"] == 2
    # Loudly: an error an operator is paged on, naming each item, and the metric counting them.
    said = [r for r in caplog.records if r.getMessage() == "unreadable event item skipped"]
    assert [(r.levelname, r.key, r.problem) for r in said] == [
        ("ERROR", "NODEEVT#node-a x", "KeyError('event')"),
        ("ERROR", "NODEEVT#node-a y", "ValueError('time')"),
    ]
    assert metrics.metric_set["EventsUnreadable"]["Value"] == [1.0, 1.0]
    assert metrics.metric_set["EventsUnreadable"]["Unit"] == "Count"
    metrics.clear_metrics()


def test_an_event_that_reached_every_outlet_but_kept_its_mark_is_cleared_without_a_call():
    table, bus = FakeEvents(), FakeBus()
    feeds = FakeFeeds(table)
    [pending] = committed(table, 1)
    table.marked[pending.stored.id] = PendingEvent(pending.stored, frozenset({"feeds", "bus"}))
    result = relay([table.pending_of(pending.stored)], [feeds, bus], table)
    assert result.relayed == {pending.stored.id}
    assert table.marked == {}
    assert (bus.calls, feeds.writes) == (0, 0)
