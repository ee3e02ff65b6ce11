"""What an operator reads of the relay: the events relayed and those that still owe an
outlet (a warning naming at most 20 of them and how many each outlet did not take), and
how old the oldest pending event is, in seconds."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from reservations.events.models import PendingEvent
from reservations.events.relay import relay, relay_backlog
from reservations.kernel.observability import metrics
from reservations.workloads.rules import events as workloads_events
from tests.support import event_scenario as s
from tests.support.event_fakes import FakeBus, FakeEvents, FakeFeeds

pytestmark = pytest.mark.disable_socket

STAY = "events not relayed everywhere yet; they stay marked"


def placements(table: FakeEvents, count: int) -> list[PendingEvent]:
    made = [workloads_events.workload_placed(s.context(n), s.VM_1) for n in range(1, count + 1)]
    return [PendingEvent(table.commit(stored)) for stored in made]


def count(value: float, unit: str = "Count") -> dict[str, Any]:
    return {"Unit": unit, "Value": [value], "StorageResolution": 60}


def test_a_relay_that_reached_everything_counts_it_and_warns_of_nothing(emitted, said):
    table = FakeEvents()
    relay(placements(table, 3), [FakeFeeds(table), FakeBus()], table)
    assert emitted == {"EventsRelayed": count(3.0)}
    assert [r for r in said.records if r.name == "reservations"] == []


def test_events_an_outlet_did_not_take_are_counted_and_warned_of_at_most_20(emitted, said):
    table = FakeEvents()
    pending = placements(table, 25)
    relay(pending, [FakeFeeds(table), FakeBus(down=True)], table)
    assert emitted == {"EventsRelayFailed": count(25.0)}
    [line] = [r for r in said.records if r.name == "reservations"]
    assert (line.levelname, line.getMessage()) == ("WARNING", STAY)
    assert line.eventIds == sorted(p.stored.id for p in pending)[:20]
    assert line.undelivered == {"bus": 25}


def test_a_pass_says_how_old_the_oldest_pending_event_is_in_seconds(emitted):
    table = FakeEvents()
    [first, *_] = placements(table, 2)
    now = first.stored.event.time + timedelta(minutes=5)
    counts = relay_backlog(now, timedelta(seconds=60), table, [FakeFeeds(table), FakeBus()])
    assert counts["oldest_pending_seconds"] == 300
    assert emitted["EventsOldestPendingSeconds"] == count(300.0, "Seconds")
    metrics.clear_metrics()
    relay_backlog(now, timedelta(seconds=60), table, [FakeFeeds(table), FakeBus()])
    assert emitted == {"EventsOldestPendingSeconds": count(0.0, "Seconds")}
