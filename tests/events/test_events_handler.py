"""The event feeds and the relay, in-process over moto: events written as their changes
will write them, the table's stream handed to the relay function, both feeds read through
their handlers, and the bus watched through a rule to a queue."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError

from devstack import fleet_documents as f
from devstack.api_events import event_file
from devstack.functions import FakeContext, invoke, load_function
from reservations.events.models import PendingEvent
from reservations.events.relay import relay, relay_backlog
from reservations.events.rules.visibility import feed_org_ids
from reservations.events.table.feeds import RelayMarks, pending_event_from_item
from reservations.events.table.keys import PLATFORM_FEED, feed_shard, feed_shard_pk
from reservations.events.table.outlets import EventBus, OrgFeeds
from reservations.kernel.aws import clients, event_items
from reservations.kernel.event_log import SETTLE_WINDOW
from reservations.kernel.settings import settings
from reservations.nodes.table.keys import NODE_EVENTS_PREFIX
from tests.support import event_scenario as s
from tests.support import state
from tests.support.bodies import comparable, unidentified
from tests.support.event_table import BusWatch, StreamRelay, name_workload_orgs, write_events
from tests.support.paging import bounded_pages
from tests.support.ports import swap_ports

pytestmark = pytest.mark.moto

U4, U5 = "0000:04:00.0", "0000:05:00.0"


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    names = ("node_events", "org_events", "event_relay", "event_backlog")
    return {name: load_function(name) for name in names}


@pytest.fixture
def node_a(aws: Any, load_fleet: Any) -> Any:
    """node-a (org-acme) with res-1 (org-broker for org-lab) and res-2 (org-reclaimer for
    org-lab2), vm-1 of org-spotbuyer; every caller kind has a key with both feeds' rights."""
    reservations = [
        f.reservation("res-1", [U4]),
        f.reservation("res-2", [U5], managingOrgIds=["org-reclaimer"], allowedOrgIds=["org-lab2"]),
    ]
    node = f.node("node-a", [f.unit(U4), f.unit(U5)], reservations, [f.workload("vm-1", [U5])])
    load_fleet(s.with_feed_permissions(f.fleet([node], extra_keys=s.fleet_keys())))
    name_workload_orgs(aws, "node-a", ["org-spotbuyer"])
    return aws


@pytest.fixture(autouse=True)
def settled(functions: dict[str, ModuleType], monkeypatch: pytest.MonkeyPatch) -> None:
    """The feeds are read as a reader reads them a settle window later: every item written
    so far is past the window (no test sleeps it out); the scheduled relay runs a grace
    period later, so every event written so far is due."""
    later = lambda: datetime.now(UTC) + SETTLE_WINDOW  # noqa: E731
    for name in ("node_events", "org_events"):
        swap_ports(monkeypatch, functions[name], clock=later)
    grace = timedelta(seconds=settings().event_relay_grace_seconds)
    monkeypatch.setattr(functions["event_backlog"], "utc_now", lambda: later() + grace)


def recent() -> datetime:
    """A base time an hour ago (events are kept HistoryRetentionDays from their time)."""
    return (datetime.now(UTC) - timedelta(hours=1)).replace(microsecond=0)


def node_feed(functions, kind: str, node: str = "node-a", **query: str) -> Any:
    return invoke(functions["node_events"], s.node_feed_event(node, s.bearer(kind), query))


def org_feed(functions, kind: str, **query: str) -> Any:
    return invoke(functions["org_events"], s.org_feed_event(s.bearer(kind), query))


@pytest.fixture
def relayed(node_a: Any, functions) -> list[Any]:
    """Every type of event written, and relayed through the stream."""
    events = write_events(s.every_type(recent()))
    StreamRelay(node_a, functions["event_relay"]).run()
    return events


def expected(events: list[Any], kind: str) -> list[dict[str, Any]]:
    return [
        e.event.envelope(kind in s.SEES_KEY_IDS)
        for e in events
        if kind in s.SEES[e.event.type.value]
    ]


@pytest.mark.parametrize("kind", [k for k in s.CALLERS if k != "stranger"])
def test_each_caller_reads_its_events_from_the_node_feed_oldest_first(functions, relayed, kind):
    pages = s.follow(lambda q: node_feed(functions, kind, **q), {"limit": "4"})
    assert pages.items == expected(relayed, kind)


@pytest.mark.parametrize("kind", list(s.CALLERS))
def test_each_org_reads_what_it_may_see_from_its_own_feed(functions, relayed, kind):
    pages = s.follow(lambda q: org_feed(functions, kind, **q), {"limit": "5"})
    assert pages.items == expected(relayed, kind)


def platform_shard(stored: Any) -> str:
    """The operator's feed's shard that the event's node goes to (shard 0: the feed's own
    partition)."""
    shards = settings().platform_feed_shards
    return feed_shard_pk(PLATFORM_FEED, feed_shard(stored.event.node_id, shards))


def test_the_relay_wrote_each_event_once_per_org_that_may_see_it(node_a, relayed):
    items = state.whole_table(node_a)
    feeds = [i for i in items if i["PK"].startswith("ORGEVT#")]
    expected_items = {
        (partition, e.id)
        for e in relayed
        for partition in [platform_shard(e), *(f"ORGEVT#{o}" for o in feed_org_ids(e))]
    }
    assert sorted((i["PK"], i["eventId"]) for i in feeds) == sorted(expected_items)
    assert all("unrelayed" not in i for i in items)  # every event reached every outlet
    assert all(i["expiresAtEpoch"] > datetime.now(UTC).timestamp() + 399 * 86400 for i in feeds)


def test_events_live_outside_the_node_partition(node_a, relayed):
    assert not [i for i in state.partition(node_a, "node-a") if "eventId" in i]
    feed = [i for i in state.whole_table(node_a) if i["PK"] == NODE_EVENTS_PREFIX + "node-a"]
    assert len(feed) == len(relayed)


def test_every_event_reaches_the_bus_as_the_contract_says(node_a, functions):
    watch = BusWatch()
    events = write_events(s.every_type(recent()))
    StreamRelay(node_a, functions["event_relay"]).run()
    arrived = watch.events()
    assert sorted(e["id"] for e in arrived) == sorted(e.id for e in events)
    by_id = {e.id: e for e in events}
    for event in arrived:
        assert event == by_id[event["id"]].event.envelope(show_key_id=True)


def feed_copies(items: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """Which feed holds which event, however many copies of it."""
    return {(i["PK"], i["eventId"]) for i in items if "eventId" in i}


def test_a_replayed_stream_batch_changes_nothing_and_sends_nothing_again(node_a, functions):
    watch = BusWatch()
    write_events(s.every_type(recent()))
    stream = StreamRelay(node_a, functions["event_relay"])
    stream.run()
    before = state.whole_table(node_a)
    assert len(watch.events()) == len(s.every_type(recent()))
    for event in stream.invocations:  # the same records again, once every event is relayed
        functions["event_relay"].lambda_handler(event, FakeContext())
    assert state.whole_table(node_a) == before  # not a second copy in any feed
    assert watch.events() == []  # nor on the bus


def test_a_crash_after_half_the_org_writes_neither_loses_nor_duplicates(
    node_a, functions, monkeypatch
):  # the stream's relay, and then the same batch again
    write_events(s.every_type(recent()))
    stream = StreamRelay(node_a, functions["event_relay"])
    writes: list[int] = []
    real = clients.dynamodb().batch_write_item

    def dies_halfway(**request: Any) -> Any:
        [items] = request["RequestItems"].values()
        if not writes:  # the first batch: half of it lands, then the function dies
            writes.append(len(items))
            real(RequestItems={state.TABLE: items[: len(items) // 2]})
            raise SystemExit("the function died mid-fan-out")
        return real(**request)

    with monkeypatch.context() as patched:
        patched.setattr(clients.dynamodb(), "batch_write_item", dies_halfway)
        with pytest.raises(SystemExit):
            stream.run()
    assert [i for i in state.whole_table(node_a) if i["PK"].startswith("ORGEVT#")]
    # Lambda retries the batch (here: the scheduled relay would do the same).
    for event in stream.invocations:
        functions["event_relay"].lambda_handler(event, FakeContext())
    items = state.whole_table(node_a)
    feeds = {(pk, event) for pk, event in feed_copies(items) if pk.startswith("ORGEVT#")}
    assert feeds == {
        (partition, e.id)
        for e in s.every_type(recent())
        for partition in [platform_shard(e), *(f"ORGEVT#{o}" for o in feed_org_ids(e))]
    }
    assert all("unrelayed" not in i for i in items)


def test_the_bus_down_for_a_day_then_every_event_arrives_once_relayed(
    node_a, functions, monkeypatch
):
    watch = BusWatch()
    events = write_events(s.every_type(recent()))

    def down(**_: Any) -> Any:
        raise EndpointConnectionError(endpoint_url="https://events.us-east-1.amazonaws.com")

    start = datetime.now(UTC)
    outlets, marks = (OrgFeeds(), EventBus()), RelayMarks()
    with monkeypatch.context() as patched:
        patched.setattr(clients.events(), "put_events", down)
        stream = StreamRelay(node_a, functions["event_relay"])
        stream.run()
        # Failed records were retried from the stream as the mapping says, then left.
        assert len(stream.invocations) == 3
        for hour in range(1, 26):  # the scheduled relay through a day (past the stream's 24 h)
            later = start + timedelta(hours=hour)
            counts = relay_backlog(later, timedelta(seconds=60), marks, outlets)
            assert counts["failed"] == len(events)
        assert watch.events() == []
        # Every org feed was written at once: the bus's outage held nothing else back.
        pages = s.follow(lambda q: org_feed(functions, "owner", **q))
        # Each stream retry wrote the feeds again, further on: the same events, once each
        # to a follower that deduplicates by id.
        assert set(s.ids(pages.items)) == {e.id for e in events}
    counts = relay_backlog(start + timedelta(hours=26), timedelta(seconds=60), marks, outlets)
    assert counts["relayed"] == len(events)
    assert sorted(e["id"] for e in watch.events()) == sorted(e.id for e in events)
    assert all("unrelayed" not in i for i in state.whole_table(node_a))


def test_the_scheduled_function_relays_what_the_stream_did_not(node_a, functions):
    watch = BusWatch()
    events = write_events(s.every_type(recent()))  # no stream relay: as if it never ran
    counts = functions["event_backlog"].lambda_handler(
        event_file("event_backlog/scheduled.json"), FakeContext()
    )
    assert counts["relayed"] == len(events)
    assert sorted(e["id"] for e in watch.events()) == sorted(e.id for e in events)


def test_the_relay_takes_only_new_event_items_from_the_stream(node_a, functions):
    stream = StreamRelay(node_a, functions["event_relay"])
    stream.run()  # the fleet's writes: no event among them
    assert stream.invocations == []
    write_events(s.every_type(recent())[:2])
    assert stream.run() == 2  # the relay's own updates of those items are not new events
    assert stream.run() == 0


# --- the 404s, byte for byte ---------------------------------------------------------------


def _reference(functions) -> Any:
    return node_feed(functions, "owner", node="node-zz")


@pytest.mark.parametrize(
    ("node", "authorization"),
    [
        ("node-a", "Bearer vl_local_test_stranger"),  # named by nothing on the node
        ("node-zz", "Bearer vl_local_test_operator"),  # unknown, even to the operator
        ("-node-a", "Bearer vl_local_test_owner"),  # malformed
        ("n" * 129, "Bearer vl_local_test_owner"),
        ("NODEEVT#node-a", "Bearer vl_local_test_owner"),
        ("node-a", "Bearer vl_local_test_events_only"),  # events.read without reservation.read
    ],
)
def test_every_node_feed_404_is_the_same_bytes(functions, node_a, load_fleet, node, authorization):
    state.put_api_key(
        node_a, "vl_local_test_events_only", key_id="events-only", org_id="org-acme",
        permissions=("events.read",),
    )  # fmt: skip
    reference = _reference(functions)
    # A bad query changes nothing for whoever may not call on the node: the 404 comes first.
    # (The operator may call on any node: its bad query is a 400, as the contract orders.)
    query = {} if "operator" in authorization else {"limit": "0"}
    result = invoke(functions["node_events"], s.node_feed_event(node, authorization, query))
    assert comparable(result) == comparable(reference)
    assert unidentified(result.body) == {"error": "not found", "code": "not_found"}


def test_the_org_feed_without_events_read_is_the_same_404(functions, node_a):
    state.put_api_key(node_a, "vl_local_test_read_only", key_id="read-only", org_id="org-acme")
    result = invoke(functions["org_events"], s.org_feed_event("Bearer vl_local_test_read_only"))
    reference = _reference(functions)
    assert comparable(result) == comparable(reference)


def test_no_key_is_a_401_before_anything(functions, node_a):
    for result in (
        invoke(functions["node_events"], s.node_feed_event("node-a", None)),
        invoke(functions["org_events"], s.org_feed_event(None)),
    ):
        assert result.status == 401
        assert result.headers["www-authenticate"] == "Bearer"


def test_a_bad_query_is_a_400_for_a_caller_allowed_on_the_node(functions, node_a):
    result = node_feed(functions, "owner", limit="0")
    assert result.status == 400
    assert result.body["details"] == [
        {"field": "limit", "problem": "must be an integer from 1 to 100"}
    ]
    result = org_feed(functions, "workload_org", types="workload.vanished")
    assert result.status == 400
    assert result.body["details"][0]["field"] == "types"


def test_operator_and_owner_get_200_on_a_node_without_events(functions, node_a):
    for kind in ("operator", "owner", "manager", "audience", "workload_org"):
        result = node_feed(functions, kind)
        assert result.status == 200, kind
        assert result.body["items"] == []
        assert result.body["hasMore"] is False
        assert result.body["nextCursor"]  # where the first events will be


# --- what a page costs -------------------------------------------------------------------------


def test_a_node_feed_page_is_one_query_after_one_getitem_of_the_access_item(
    functions, relayed, sent_requests
):
    node_feed(functions, "manager")  # the key is cached from here on
    for query in ({}, {"limit": "2"}, {"types": "reservation.created"}):
        cursor_query = dict(query)
        for _ in range(3):
            sent_requests.clear()
            result = node_feed(functions, "manager", **cursor_query)
            assert sent_requests.by_service("dynamodb") == {"GetItem": 1, "Query": 1}
            if not result.body["hasMore"]:
                break
            cursor_query["cursor"] = result.body["nextCursor"]


def test_an_org_feed_page_is_one_query(functions, relayed, sent_requests):
    org_feed(functions, "owner")
    cursor_query = {"limit": "3"}
    for _ in bounded_pages():
        sent_requests.clear()
        result = org_feed(functions, "owner", **cursor_query)
        assert sent_requests.by_service("dynamodb") == {"Query": 1}
        if not result.body["hasMore"]:
            break
        cursor_query["cursor"] = result.body["nextCursor"]


def test_a_node_feed_page_reads_limit_plus_one_events_whatever_the_feeds_length(
    functions, node_a, sent_requests
):
    write_events(s.every_type(recent()) + s.every_type(recent() - timedelta(minutes=5)))
    node_feed(functions, "owner")
    sent_requests.clear()
    node_feed(functions, "owner", limit="3")
    assert sent_requests.items_read == [(4, 4)]


def test_the_relay_costs_a_batch_write_per_25_feed_items_and_a_put_per_10_events(
    node_a, functions, sent_requests
):
    events = write_events(s.every_type(recent()))
    stream = StreamRelay(node_a, functions["event_relay"])
    sent_requests.clear()
    stream.run()
    items = sum(len(feed_org_ids(e)) + 1 for e in events)
    dynamodb = sent_requests.by_service("dynamodb")
    assert dynamodb["BatchWriteItem"] == -(-items // 25)
    assert dynamodb["UpdateItem"] == len(events)  # each event settled
    assert sent_requests.by_service("events")["PutEvents"] == -(-len(events) // 10)


def test_the_bus_gets_the_stacks_bus_name_source_and_type(node_a, functions, monkeypatch):
    sent: list[dict[str, Any]] = []
    real = clients.events().put_events

    def recorded(**request: Any) -> Any:
        sent.extend(request["Entries"])
        return real(**request)

    monkeypatch.setattr(clients.events(), "put_events", recorded)
    [stored] = write_events(s.every_type(recent())[:1])
    StreamRelay(node_a, functions["event_relay"]).run()
    [entry] = sent
    assert entry["EventBusName"] == "EventBus"
    assert entry["Source"] == "reservations"
    assert entry["DetailType"] == "node.registered"
    assert entry["Detail"] == stored.event.to_json()
    assert boto3.client("events").describe_event_bus(Name="EventBus")["Name"] == "EventBus"


# --- following a feed: record order, a cursor on every page, the settle window ----------------


class Clock:
    """The one clock of a following scenario: the feeds' writers and the reader read it."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC).replace(microsecond=0)

    def tick(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock(functions, monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(event_items, "record_clock", lambda: clock.now)
    swap_ports(monkeypatch, functions["org_events"], clock=lambda: clock.now)
    return clock


def pending(aws: Any, *stored: Any) -> list[PendingEvent]:
    """The node feed items of ``stored`` as the relay takes them, in that order."""
    items = {i["eventId"]: i for i in state.whole_table(aws) if i["PK"].startswith("NODEEVT#")}
    return [pending_event_from_item(items[e.id]) for e in stored]


class Follower:
    """A poller of the operator's feed: keeps the last cursor, deduplicates by id."""

    def __init__(self, functions) -> None:
        self.functions, self.cursor, self.seen = functions, None, []

    def poll(self) -> list[str]:
        got: list[str] = []
        for _ in bounded_pages():
            query = {"cursor": self.cursor} if self.cursor else {}
            page = org_feed(self.functions, "operator", limit="5", **query)
            assert page.status == 200, page.body_text
            got += [e["id"] for e in page.body["items"] if e["id"] not in self.seen + got]
            self.cursor = page.body["nextCursor"]
            if not page.body["hasMore"]:
                break
        self.seen += got
        return got


def test_an_event_relayed_after_a_later_one_is_still_seen_by_a_poller(node_a, functions, clock):
    a, b = write_events(s.every_type(recent())[:2])  # A, then B a moment later
    follower = Follower(functions)
    clock.tick(1)
    relay(pending(node_a, b), (OrgFeeds(),), RelayMarks())  # the stream hands B over first
    clock.tick(6)
    assert follower.poll() == [b.id]
    clock.tick(1)
    relay(pending(node_a, a), (OrgFeeds(),), RelayMarks())
    clock.tick(6)
    assert follower.poll() == [a.id]  # recorded after B, so after the poller's cursor


def test_a_relay_that_stalls_past_the_window_writes_again_past_the_readers_cursor(
    node_a, functions, clock, monkeypatch
):
    (a,) = write_events(s.every_type(recent())[:1])
    follower = Follower(functions)
    real = clients.dynamodb().batch_write_item

    def stalls(**request: Any) -> Any:
        if not follower.seen and clock.now < stall_end:  # the first write hangs 7 s
            clock.tick(7)
            assert follower.poll() == []  # a read meanwhile passes A's first position
        return real(**request)

    stall_end = clock.now + timedelta(seconds=1)
    monkeypatch.setattr(clients.dynamodb(), "batch_write_item", stalls)
    result = relay(pending(node_a, a), (OrgFeeds(),), RelayMarks())
    assert result.relayed == {a.id}
    clock.tick(6)
    assert follower.poll() == [a.id]


def test_a_backlog_pass_after_a_long_outage_reaches_a_follower_already_at_the_end(
    node_a, functions, clock, monkeypatch
):
    events = write_events(s.every_type(recent()))
    follower = Follower(functions)
    with monkeypatch.context() as patched:
        patched.setattr(clients.dynamodb(), "batch_write_item", _feeds_down)
        relay(pending(node_a, *events), (OrgFeeds(),), RelayMarks())  # the stream gave up
        for _ in range(6):  # polling through 6 hours of outage: nothing, and a cursor
            clock.tick(3600)
            assert follower.poll() == []
    counts = relay_backlog(clock.now, timedelta(seconds=60), RelayMarks(), (OrgFeeds(),))
    assert counts["relayed"] == len(events)
    clock.tick(6)
    assert sorted(follower.poll()) == sorted(e.id for e in events)


def _feeds_down(**_: Any) -> Any:
    raise EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")


def test_a_follower_of_many_nodes_written_and_relayed_out_of_order_sees_every_event(
    node_a, functions, clock
):
    rng = random.Random(39)
    written, unrelayed = [], []
    follower = Follower(functions)
    for n in range(120):  # writes on 8 nodes, relays in any order, a poll now and then
        clock.tick(rng.choice([0, 0.001, 0.2, 1.5]))
        if rng.random() < 0.5:
            written += write_events([_on_node(rng.choice(s.every_type(recent())), n % 8, n)])
            unrelayed.append(written[-1])
        elif unrelayed:
            rng.shuffle(unrelayed)
            batch, unrelayed[:] = unrelayed[:3], unrelayed[3:]
            relay(pending(node_a, *batch), (OrgFeeds(),), RelayMarks())
        if rng.random() < 0.3:
            follower.poll()
    relay(pending(node_a, *unrelayed), (OrgFeeds(),), RelayMarks())
    clock.tick(6)
    follower.poll()
    whole = [i["eventId"] for i in state.whole_table(node_a) if i["PK"].startswith(PLATFORM_FEED)]
    assert sorted(follower.seen) == sorted(set(whole)) == sorted(e.id for e in written)


def _on_node(stored: Any, node: int, n: int) -> Any:
    """``stored`` as the n-th write, on node ``node-<node>``: an event of its own."""
    event = replace(stored.event, id=f"evt-{n:026d}", node_id=f"node-{node}")
    return replace(stored, event=event)
