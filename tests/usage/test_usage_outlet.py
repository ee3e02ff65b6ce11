"""The relay's usage outlet (``usage/checkpoints.py``), over a table kept in memory: for each
node an event is relayed of, the checkpoint of the last hour that began at least two minutes
ago, made from the node's latest one and the events since; nothing read again in the same
container within the hour; a node whose table calls fail hands back its events only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from reservations.kernel.envelope import CloudEvent, StoredEvent
from reservations.usage.checkpoints import USAGE, UsageCheckpoints, checkpoint_hour
from reservations.usage.rules.facts import to_ms
from reservations.usage.rules.ledger import Carried, carry
from tests.usage.histories import HOUR, NODE, T0, event, unit

pytestmark = pytest.mark.disable_socket

START = datetime(2025, 12, 1, tzinfo=UTC)  # T0
REGISTERED = event("evt-1", T0 + 10 * 60_000, "node.registered", f"nodes/{NODE}",
                   topologyGen=1, addedUnitIds=[unit(1)],
                   units=[{"id": unit(1), "sellableGpus": 2}])  # fmt: skip


class Table:
    """Checkpoints and a node's events in memory, counting what the outlet asks."""

    def __init__(self, events: Sequence[Mapping[str, Any]] = ()) -> None:
        self.events = list(events)
        self.kept: dict[tuple[str, int], Carried] = {}
        self.asked: list[str] = []
        self.failing: set[str] = set()

    def _ask(self, what: str, node_id: str) -> None:
        self.asked.append(what)
        if node_id in self.failing:
            raise ClientError({"Error": {"Code": "ServiceUnavailable"}}, what)

    def node_history(self, node_id: str, since: int | None, end: int) -> list[Any]:
        self._ask(f"history {node_id} {since} {end}", node_id)
        times = ((e, to_ms(datetime.fromisoformat(e["time"]))) for e in self.events)
        return [e for e, ms in times if (since is None or ms >= since) and ms < end]

    def checkpoint(self, node_id: str, at_or_before: int) -> Carried | None:
        self._ask(f"checkpoint {node_id}", node_id)
        kept = [at for (node, at) in self.kept if node == node_id and at <= at_or_before]
        return self.kept[node_id, max(kept)] if kept else None

    def put_checkpoint(self, carried: Carried, retention_days: int) -> None:
        self._ask(f"put {carried.node_id} {carried.at}", carried.node_id)
        self.kept[carried.node_id, carried.at] = carried


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def relayed(event_id: str, node_id: str = NODE) -> StoredEvent:
    cloud = CloudEvent(event_id, "workload.placed", node_id, "workloads/vm-1", START, {})
    return StoredEvent(cloud, "org-acme")


def test_the_hour_a_checkpoint_is_made_for_began_two_minutes_ago_or_more():
    at_hour = START + timedelta(hours=3)
    assert checkpoint_hour(at_hour + timedelta(minutes=2)) == T0 + 3 * HOUR
    assert checkpoint_hour(at_hour + timedelta(minutes=1, seconds=59)) == T0 + 2 * HOUR
    assert checkpoint_hour(at_hour + timedelta(minutes=59)) == T0 + 3 * HOUR


def test_a_relayed_events_node_gets_its_checkpoint_from_its_latest_one_and_the_events_since():
    table = Table([REGISTERED])
    clock = Clock(START + timedelta(hours=1, minutes=5))
    outlet = UsageCheckpoints(table, clock)
    assert outlet.name == USAGE
    assert outlet.deliver([relayed("evt-a"), relayed("evt-b")]) == set()
    assert table.asked == [f"checkpoint {NODE}", f"history {NODE} None {T0 + HOUR}",
                           f"put {NODE} {T0 + HOUR}"]  # fmt: skip
    assert table.kept[NODE, T0 + HOUR] == carry(NODE, [REGISTERED], T0 + HOUR)
    # An hour later, a new container: made from the last one, with the events since it.
    clock.now += timedelta(hours=1)
    table.asked.clear()
    assert UsageCheckpoints(table, clock).deliver([relayed("evt-c")]) == set()
    assert table.asked == [f"checkpoint {NODE}", f"history {NODE} {T0 + HOUR} {T0 + 2 * HOUR}",
                           f"put {NODE} {T0 + 2 * HOUR}"]  # fmt: skip
    assert table.kept[NODE, T0 + 2 * HOUR] == carry(NODE, [REGISTERED], T0 + 2 * HOUR)


def test_a_checkpoint_kept_already_is_not_made_again_and_not_asked_again_within_the_hour():
    table = Table([REGISTERED])
    clock = Clock(START + timedelta(hours=1, minutes=5))
    UsageCheckpoints(table, clock).deliver([relayed("evt-a")])
    table.asked.clear()
    outlet = UsageCheckpoints(table, clock)  # another container: reads it, makes nothing
    assert outlet.deliver([relayed("evt-b")]) == set()
    assert table.asked == [f"checkpoint {NODE}"]
    table.asked.clear()
    clock.now += timedelta(minutes=50)  # the same hour: this container knows it is kept
    assert outlet.deliver([relayed("evt-c")]) == set()
    assert table.asked == []


def test_a_node_whose_checkpoint_fails_hands_back_its_events_and_only_those():
    table = Table([REGISTERED])
    table.failing = {"node-down"}
    clock = Clock(START + timedelta(hours=1, minutes=5))
    outlet = UsageCheckpoints(table, clock)
    events = [relayed("evt-a"), relayed("evt-b", "node-down"), relayed("evt-c", "node-down")]
    assert outlet.deliver(events) == {"evt-b", "evt-c"}
    assert (NODE, T0 + HOUR) in table.kept
    # Handed over again once the table answers: kept then.
    table.failing.clear()
    assert outlet.deliver(events[1:]) == set()
    assert ("node-down", T0 + HOUR) in table.kept
