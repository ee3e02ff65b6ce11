"""The sharded feeds in-process over moto: the relay writes each event into its node's shard
of the operator's feed (and of a sharded org's), the handler's page merges them, and a page
costs one Query per shard (the operator's: ``PlatformFeedShards``; an org's without shards:
one)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.functions import FakeContext, invoke, load_function
from reservations.events.rules.visibility import feed_org_ids
from reservations.events.table.keys import PLATFORM_FEED, feed_shard
from reservations.kernel.aws import clients, event_items
from reservations.kernel.event_log import SETTLE_WINDOW
from reservations.kernel.http.resolver import key_cache
from reservations.kernel.settings import settings
from tests.support import event_scenario as s
from tests.support import state
from tests.support.event_table import StreamRelay, write_events
from tests.support.ports import swap_ports

pytestmark = pytest.mark.moto

NODES = [f"node-{n}" for n in range(12)]


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    return {name: load_function(name) for name in ("org_events", "event_relay", "event_backlog")}


@pytest.fixture
def table(aws: Any, load_fleet: Any, monkeypatch: pytest.MonkeyPatch, functions) -> Any:
    """The operator's feed with its deployed shard count, org-broker's feed in 3 shards;
    every caller kind has a key with the feeds' rights; the feeds are read a settle
    window later (every item written so far is past it)."""
    monkeypatch.setenv("ORG_FEED_SHARDS", "org-broker=3")
    clients.reset()
    node = f.node("node-a", [f.unit("0000:04:00.0")], [], [])
    load_fleet(s.with_feed_permissions(f.fleet([node], extra_keys=s.fleet_keys())))
    later = lambda: datetime.now(UTC) + SETTLE_WINDOW  # noqa: E731
    swap_ports(monkeypatch, functions["org_events"], clock=later)
    return aws


@pytest.fixture
def relayed(table: Any, functions) -> list[Any]:
    """Events of every type on 12 nodes, relayed through the stream."""
    base = (datetime.now(UTC) - timedelta(hours=1)).replace(microsecond=0)
    events = [
        replace(stored, event=replace(stored.event, id=f"evt-{n:026d}", node_id=NODES[n % 12]))
        for n, stored in enumerate(s.every_type(base) * 3)
    ]
    written = write_events(events)
    StreamRelay(table, functions["event_relay"]).run()
    return written


def org_feed(functions, kind: str, **query: str) -> Any:
    return invoke(functions["org_events"], s.org_feed_event(s.bearer(kind), query))


def test_the_relay_writes_each_event_into_its_nodes_shard_of_the_sharded_feeds(table, relayed):
    shards = settings().platform_feed_shards
    assert shards == 32  # the deployed default
    items = [i for i in state.whole_table(table) if i["PK"].startswith("ORGEVT#")]
    platform = {i["eventId"]: i["PK"] for i in items if i["PK"].startswith(PLATFORM_FEED)}
    broker = {i["eventId"]: i["PK"] for i in items if i["PK"].startswith("ORGEVT#org-broker")}
    for stored in relayed:
        k = feed_shard(stored.event.node_id, shards)
        assert platform[stored.id] == (PLATFORM_FEED if k == 0 else f"{PLATFORM_FEED}#{k}")
        if "org-broker" in feed_org_ids(stored):
            b = feed_shard(stored.event.node_id, 3)
            assert broker[stored.id] == (
                "ORGEVT#org-broker" if b == 0 else f"ORGEVT#org-broker#{b}"
            )
    # Every node's events in one shard each, and the nodes spread over several.
    by_node = {(stored.event.node_id, platform[stored.id]) for stored in relayed}
    assert len(by_node) == len(NODES)
    assert len({pk for _, pk in by_node}) > 4
    assert not [i for i in items if i["PK"].startswith("ORGEVT#org-lab#")]  # one partition


def test_the_operators_pages_hold_every_event_in_record_order(functions, relayed):
    pages = s.follow(lambda q: org_feed(functions, "operator", **q), {"limit": "7"})
    assert s.ids(pages.items) == [e.id for e in relayed]  # written in this order, one relay


def test_a_page_costs_one_query_per_shard_of_the_callers_feed(functions, relayed, sent_requests):
    org_feed(functions, "operator", limit="1")  # keys cached, as in a warm container
    org_feed(functions, "manager", limit="1")
    org_feed(functions, "owner", limit="1")
    for kind, shards in (("operator", 32), ("manager", 3), ("owner", 1)):  # manager: broker
        sent_requests.clear()
        first = org_feed(functions, kind, limit="5")
        assert first.status == 200
        assert sent_requests.by_service("dynamodb") == Counter({"Query": shards})
        sent_requests.clear()
        cursor = first.body["nextCursor"]
        assert org_feed(functions, kind, limit="5", cursor=cursor).status == 200
        assert sent_requests.by_service("dynamodb") == Counter({"Query": shards})
    key_cache.clear()


def test_the_relays_marks_spread_over_the_index_and_the_backlog_reads_every_one(
    table, functions, monkeypatch
):
    """Events no stream relayed (an outage): each waits under its node's mark, the marks
    spread over several index partitions, and the scheduled relay's pass finds every one."""
    base = (datetime.now(UTC) - timedelta(hours=1)).replace(microsecond=0)
    events = [
        replace(stored, event=replace(stored.event, id=f"evt-{n:026d}", node_id=NODES[n % 12]))
        for n, stored in enumerate(s.every_type(base))
    ]
    write_events(events)
    marked = {
        i["eventId"]: i[event_items.UNRELAYED]
        for i in state.whole_table(table)
        if event_items.UNRELAYED in i
    }
    assert marked == {e.id: event_items.relay_mark(e.event.node_id) for e in events}
    assert len(set(marked.values())) > 4
    grace = timedelta(seconds=settings().event_relay_grace_seconds)
    due = lambda: datetime.now(UTC) + grace + timedelta(seconds=1)  # noqa: E731
    monkeypatch.setattr(functions["event_backlog"], "utc_now", due)
    counts = functions["event_backlog"].lambda_handler({}, FakeContext())
    assert counts["relayed"] == len(events)
    assert not [i for i in state.whole_table(table) if event_items.UNRELAYED in i]
    pages = s.follow(lambda q: org_feed(functions, "operator", **q), {"limit": "50"})
    assert sorted(s.ids(pages.items)) == sorted(e.id for e in events)
