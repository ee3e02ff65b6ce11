"""The feeds over in-memory fakes: who gets a page or the 404, what a page holds, where the
next one starts, and what the query may say."""

from __future__ import annotations

import base64
import json
from datetime import timedelta

import pytest

from reservations.capacity.rules import events as capacity_events
from reservations.events.feeds import FeedQuery, node_feed, org_feed
from reservations.events.models import NodeFeedAccess
from reservations.events.rules.visibility import feed_org_ids
from reservations.kernel.caller import Caller
from reservations.kernel.errors import InvalidRequest, NotFound
from reservations.kernel.times import LAST_MOMENT
from reservations.lifecycle.read import ListQuery, list_reservations
from tests.support import event_scenario as s
from tests.support.event_fakes import PLATFORM, FakeEvents
from tests.support.fakes import FakeClock, FakeTable
from tests.support.paging import bounded_pages

pytestmark = pytest.mark.disable_socket

KEY = b"k" * 32
NOW = s.T0 + timedelta(days=1)
FEEDS = frozenset({"reservation.read", "events.read"})
ACCESS = NodeFeedAccess(
    "org-acme",
    dict.fromkeys(("org-broker", "org-lab", "org-reclaimer", "org-lab2"), LAST_MOMENT),
    frozenset({"org-spotbuyer"}),
)


def who(kind: str, permissions: frozenset[str] = FEEDS) -> Caller:
    return Caller(f"key-{kind}", s.CALLERS[kind][1], permissions, kind == "operator")


@pytest.fixture
def table() -> FakeEvents:
    """node-a with one event of every type, each relayed to its org feeds."""
    table = FakeEvents(access={"node-a": ACCESS})
    for stored in s.every_type():
        kept = table.commit(stored)
        for org in [PLATFORM, *feed_org_ids(kept)]:
            table.org_feeds.setdefault(org, {})[str(kept.position)] = kept
    return table


def node_page(table: FakeEvents, kind: str, **query: str):
    return node_feed(who(kind), "node-a", FeedQuery(**query), table, KEY, NOW)


def every_page(read, **query: str) -> tuple[list[dict], int]:
    items, pages, cursor = [], [], None
    for _ in bounded_pages():
        page = read(**query, **({"cursor": cursor} if cursor else {}))
        pages.append(page)
        items.extend(item.model_dump() for item in page.items)
        cursor = page.next_cursor
        if not page.has_more:
            break
    return items, len(pages)


@pytest.mark.parametrize("kind", list(s.CALLERS))
def test_each_caller_reads_in_order_exactly_the_events_it_may_see(table, kind):
    expected = [
        e.event.envelope(kind in s.SEES_KEY_IDS)
        for e in s.every_type()
        if kind in s.SEES[e.event.type.value]
    ]
    if kind == "stranger":
        with pytest.raises(NotFound):
            node_page(table, kind)
        return
    items, _ = every_page(lambda **q: node_page(table, kind, **q), limit="3")
    assert items == expected


@pytest.mark.parametrize("kind", [k for k in s.CALLERS if k != "stranger"])
def test_each_orgs_feed_holds_what_it_may_see_with_key_ids_for_operator_and_owner(table, kind):
    expected = [
        e.event.envelope(kind in s.SEES_KEY_IDS)
        for e in s.every_type()
        if kind in s.SEES[e.event.type.value]
    ]
    items, _ = every_page(lambda **q: org_feed(who(kind), FeedQuery(**q), table, KEY, NOW))
    assert items == expected


def test_the_stranger_reads_an_empty_feed_of_its_own_and_a_404_on_the_node():
    table = FakeEvents(access={"node-a": ACCESS})
    page = org_feed(who("stranger"), FeedQuery(), table, KEY, NOW)
    assert page.items == []
    assert page.next_cursor
    assert not page.has_more
    with pytest.raises(NotFound):
        node_page(table, "stranger")


def test_operator_and_owner_get_an_empty_page_of_a_node_without_events():
    table = FakeEvents(access={"node-a": ACCESS})
    for kind in ("operator", "owner", "manager", "workload_org"):
        page = node_page(table, kind)
        assert page.items == []
        assert page.next_cursor
        assert not page.has_more


@pytest.mark.parametrize(
    ("caller", "node_id"),
    [
        (who("owner"), "node-zz"),  # unknown node
        (who("owner", frozenset({"events.read"})), "node-a"),  # no reservation.read
        (who("stranger"), "node-a"),  # named by nothing on the node
        (who("owner"), "-node-a"),  # malformed id
        (who("operator"), "node-zz"),
    ],
)
def test_the_node_feeds_404s(table, caller, node_id):
    with pytest.raises(NotFound):
        node_feed(caller, node_id, FeedQuery(), table, KEY, NOW)


def test_the_org_feed_needs_events_read(table):
    with pytest.raises(NotFound):
        org_feed(who("owner", frozenset({"reservation.read"})), FeedQuery(), table, KEY, NOW)


def test_a_page_may_hold_fewer_than_limit_and_still_have_more_and_the_last_says_no_more(table):
    # The broker sees the 7 reservation events among 15: pages read 3 events each.
    pages = []
    cursor = None
    for _ in bounded_pages():
        page = node_page(table, "manager", limit="2", **({"cursor": cursor} if cursor else {}))
        pages.append([item.type for item in page.items])
        cursor = page.next_cursor
        if not page.has_more:
            break
    assert any(len(items) < 2 for items in pages[:-1])  # short pages, yet a cursor
    assert sum(len(items) for items in pages) == 7
    assert table.queries == len(pages)  # one Query a page


def test_a_page_of_exactly_the_remaining_events_is_the_last(table):
    page = node_page(table, "owner", limit="14")
    assert len(page.items) == 14
    assert page.has_more
    last = node_page(table, "owner", limit="14", cursor=page.next_cursor)
    assert len(last.items) == 1
    assert not last.has_more
    whole = node_page(table, "owner", limit="15")
    assert len(whole.items) == 15
    assert not whole.has_more


def test_types_filter_any_order_and_spaces(table):
    page = node_page(table, "owner", types=" workload.terminated ,reservation.created")
    assert [item.type for item in page.items] == ["reservation.created", "workload.terminated"]


def test_after_is_exclusive_to_the_millisecond(table):
    events = s.every_type()
    third = events[2].event.time  # T0 + 3.003 s
    page = node_page(table, "owner", after=third.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z")
    assert [item.id for item in page.items] == [e.id for e in events[3:]]
    just_before = third - timedelta(microseconds=1)
    page = node_page(table, "owner", after=just_before.isoformat())
    assert [item.id for item in page.items] == [e.id for e in events[2:]]
    page = node_page(table, "owner", after="2026-11-30T13:00:00+01:00")  # T0 itself
    assert len(page.items) == 15


def test_events_past_retention_are_not_shown(table):
    later = s.T0 + timedelta(days=400, seconds=5)
    page = node_feed(who("owner"), "node-a", FeedQuery(), table, KEY, later)
    assert [item.id for item in page.items] == [e.id for e in s.every_type()[4:]]  # 1-4 gone


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"limit": "007"}, "limit"),
        ({"types": "reservation.created,"}, "types"),
        ({"types": "reservation.made"}, "types"),
        ({"types": "node.updated\t"}, "types"),  # spaces around a type only are ignored
        ({"types": "Xnode.updated"}, "types"),
        ({"after": "yesterday"}, "after"),
        ({"after": "2026-11-30T12:00:00"}, "after"),  # no offset
        ({"after": "0001-01-01T00:00:00Z"}, "after"),
        ({"cursor": "garbage"}, "cursor"),
    ],
)
def test_a_bad_query_part_is_a_400_naming_it(table, query, field):
    for read in (
        lambda: node_page(table, "owner", **query),
        lambda: org_feed(who("owner"), FeedQuery(**query), table, KEY, NOW),
    ):
        with pytest.raises(InvalidRequest) as refused:
            read()
        assert [d.field for d in refused.value.details] == [field]


def test_empty_parts_are_absent(table):
    page = node_page(table, "owner", types="", after="", limit="", cursor="")
    assert len(page.items) == 15


def test_a_cursor_is_bound_to_its_feed_filter_after_and_org(table):
    first = node_page(table, "owner", limit="1", types="reservation.created,node.updated")
    cursor = first.next_cursor
    assert cursor
    # The same filter in another order is the same feed.
    node_page(table, "owner", limit="1", types="node.updated,reservation.created", cursor=cursor)
    for read in (
        lambda: node_page(table, "owner", limit="1", cursor=cursor),  # another filter
        lambda: node_page(table, "operator", cursor=cursor, types="node.updated,reservation.created"),
        lambda: org_feed(who("owner"), FeedQuery(cursor=cursor), table, KEY, NOW),
        lambda: node_page(
            table, "owner", cursor=cursor, types="node.updated,reservation.created",
            after="2026-01-01T00:00:00Z",
        ),
    ):  # fmt: skip
        with pytest.raises(InvalidRequest):
            read()


def test_a_reservation_list_cursor_is_no_feed_cursor_and_the_other_way_round(table, clock_store):
    listing = list_reservations(who("owner"), "node-a", ListQuery(limit="1"), clock_store, KEY, NOW)
    assert listing.next_cursor
    with pytest.raises(InvalidRequest):
        node_page(table, "owner", cursor=listing.next_cursor)
    feed = node_page(table, "owner", limit="1")
    with pytest.raises(InvalidRequest):
        list_reservations(
            who("owner"), "node-a", ListQuery(cursor=feed.next_cursor), clock_store, KEY, NOW
        )


def test_a_cursor_is_a_position_only_an_org_that_lost_the_node_gets_the_404(table):
    page = node_page(table, "manager", limit="1")
    table.access["node-a"] = NodeFeedAccess("org-acme")  # the broker is named no more
    with pytest.raises(NotFound):
        node_page(table, "manager", limit="1", cursor=page.next_cursor)


def test_a_new_owner_sees_the_nodes_past_with_key_ids_and_the_old_one_loses_it(table):
    table.access["node-a"] = NodeFeedAccess("org-newowner")
    newowner = Caller("key-new", "org-newowner", FEEDS)
    page = node_feed(newowner, "node-a", FeedQuery(), table, KEY, NOW)
    assert len(page.items) == 15
    assert page.items[0].data["actor"]["keyId"] == "key-operator-1"
    with pytest.raises(NotFound):
        node_page(table, "owner")
    # In its own feed, the old owner keeps what it was given, key ids included.
    items, _ = every_page(lambda **q: org_feed(who("owner"), FeedQuery(**q), table, KEY, NOW))
    assert len(items) == 15
    assert items[0]["data"]["actor"]["keyId"] == "key-operator-1"


def test_the_node_owner_sees_another_orgs_key_id_but_the_calling_org_does_not(table):
    reclaimed = capacity_events.reservation_reclaimed(s.context(99), s.RES_1, [], None, [], [])
    table.commit(reclaimed)
    owner = node_page(table, "owner", types="reservation.reclaimed").items[-1]
    broker = node_page(table, "manager", types="reservation.reclaimed").items[-1]
    assert owner.data["actor"] == {"orgId": "org-broker", "keyId": "key-broker-1"}
    assert broker.data["actor"] == {"orgId": "org-broker"}


def test_an_event_leaves_the_feed_at_the_moment_it_expires(table):
    first, second = s.every_type()[:2]
    expired = first.event.time + timedelta(days=400)  # what the table keeps: 400 days
    page = node_feed(who("owner"), "node-a", FeedQuery(), table, KEY, expired)
    assert [item.id for item in page.items][:1] == [second.id]


def test_a_cursor_carries_its_position_and_the_scope_it_is_bound_to(table):
    # Readable fields, not a format of the moment: cursors handed out before a deploy keep
    # working after it.
    node = node_page(table, "owner", limit="1", types="workload.placed,node.updated")
    assert cursor_fields(node.next_cursor) == {
        "a": table.position(s.every_type()[1]),  # where its Query of 2 stopped, none kept
        "n": "node-a",
        "s": "node.updated,workload.placed",
        "o": "org-acme",
        "f": "node-events",
        "t": "",
    }
    org = org_feed(
        who("owner"), FeedQuery(limit="1", after="2026-11-30T12:00:02Z"), table, KEY, NOW
    )
    fields = cursor_fields(org.next_cursor)
    assert {name: fields[name] for name in "nsoft"} == {
        "n": "",
        "s": "",
        "o": "org-acme",
        "f": "events",
        "t": "2026-11-30T12:00:02.000Z#~",
    }
    table.access["node-b"] = ACCESS  # another node's feed takes none of node-a's cursors
    with pytest.raises(InvalidRequest):
        node_feed(who("owner"), "node-b", FeedQuery(limit="1", types="workload.placed,node.updated",
                                                    cursor=node.next_cursor), table, KEY, NOW)  # fmt: skip


def cursor_fields(cursor: str | None) -> dict[str, str]:
    assert cursor
    payload = cursor.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def test_a_page_reads_one_event_more_than_its_limit_from_its_position(table, monkeypatch):
    reads: list[tuple[str, str | None, int]] = []
    node_read, org_read = table.node_events, table.org_events
    monkeypatch.setattr(
        table, "node_events", lambda feed, after, before, count: (
            reads.append(("node_events", after, count)) or node_read(feed, after, before, count)
        ),
    )  # fmt: skip
    monkeypatch.setattr(
        table, "org_events", lambda feed, shard, after, before, count: (
            reads.append(("org_events", after, count))
            or org_read(feed, shard, after, before, count)
        ),
    )  # fmt: skip
    after = "2026-11-30T12:00:02Z"
    node_page(table, "owner", limit="3", after=after)
    org_feed(who("owner"), FeedQuery(limit="7", after=after), table, KEY, NOW)
    start = "2026-11-30T12:00:02.000Z#~"
    assert reads == [("node_events", start, 4), ("org_events", start, 8)]


@pytest.mark.parametrize(
    "caller", [who("owner"), who("owner", frozenset({"events.read"}))], ids=["bad-id", "no-read"]
)
def test_a_malformed_node_id_or_a_key_without_read_is_refused_before_any_read(table, caller):
    node_id = "-node-a" if caller.has("reservation.read") else "node-a"
    table.feed_access = lambda node_id: pytest.fail(f"read the access of {node_id}")
    with pytest.raises(NotFound):
        node_feed(caller, node_id, FeedQuery(), table, KEY, NOW)
    assert table.queries == 0


@pytest.fixture
def clock_store() -> FakeTable:
    from reservations.nodes.models.partition import Node

    store = FakeTable(FakeClock(NOW))
    store.add(Node("node-a", "org-acme"), [], [s.RES_1, s.RES_2], [])
    return store
