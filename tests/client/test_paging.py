"""Iterators that page by themselves: a list ends where a page has no nextCursor; a feed ends
on hasMore false (or, from a server that sends no hasMore, on a page without nextCursor or
items); a followed feed waits at its end and yields each event once."""

from __future__ import annotations

from collections.abc import Callable
from itertools import islice
from typing import Any
from urllib.parse import parse_qs

import httpx

from reservations_client import NO_RETRIES, Reservations

PageFor = Callable[[str | None], dict[str, Any]]


def event(number: int) -> dict[str, Any]:
    return {"specversion": "1.0", "id": f"evt-{number}", "type": "reservation.reclaimed",
            "source": "/v1/nodes/node-a1", "subject": "reservations/res-1",
            "time": "2026-12-01T05:08:47.123Z", "datacontenttype": "application/json",
            "data": {}}  # fmt: skip


def subscription(number: int) -> dict[str, Any]:
    return {"id": f"wh-{number}", "url": "https://hooks.example/x", "status": "active",
            "createdAt": "2026-12-01T00:00:00Z"}  # fmt: skip


class Pages:
    """An API answering each list or feed read with the page for its cursor."""

    def __init__(self, page_for: PageFor) -> None:
        self.page_for = page_for
        self.cursors: list[str | None] = []
        self.queries: list[dict[str, list[str]]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        query = parse_qs(request.url.query.decode())
        self.queries.append(query)
        cursor = query.get("cursor", [None])[0]
        self.cursors.append(cursor)
        return httpx.Response(200, json=self.page_for(cursor))

    def client(self) -> Reservations:
        return Reservations("http://api.test", "vl_test", transport=httpx.MockTransport(self),
                            retry=NO_RETRIES)  # fmt: skip


def test_a_list_is_read_to_the_page_without_a_cursor():
    pages = {None: ([1, 2], "c1"), "c1": ([3], "c2"), "c2": ([4, 5], None)}

    def page_for(cursor: str | None) -> dict[str, Any]:
        numbers, following = pages[cursor]
        page: dict[str, Any] = {"items": [subscription(n) for n in numbers]}
        return page | ({"nextCursor": following} if following else {})

    api = Pages(page_for)
    assert [s.id for s in api.client().iter_webhooks()] == ["wh-1", "wh-2", "wh-3", "wh-4", "wh-5"]
    assert api.cursors == [None, "c1", "c2"]


def test_a_feed_ends_where_has_more_is_false_though_it_has_a_cursor():
    pages = {None: ([1, 2], "c1", True), "c1": ([], "c2", True), "c2": ([3], "c3", False)}

    def page_for(cursor: str | None) -> dict[str, Any]:
        numbers, following, more = pages[cursor]
        return {"items": [event(n) for n in numbers], "nextCursor": following, "hasMore": more}

    api = Pages(page_for)
    found = api.client().iter_events(types=["reservation.reclaimed"], after="2026-12-01T00:00:00Z")
    assert [e.id for e in found] == [
        "evt-1",
        "evt-2",
        "evt-3",
    ]  # an empty page with hasMore goes on
    assert api.cursors == [None, "c1", "c2"]
    assert all(q["types"] == ["reservation.reclaimed"] for q in api.queries)  # the cursor's own
    assert all(q["after"] == ["2026-12-01T00:00:00+00:00"] for q in api.queries)


def test_a_followed_feed_waits_at_its_end_and_yields_each_event_once():
    script = [  # (items, nextCursor, hasMore) of each read, in order
        ([1, 2], "c1", False), ([2], "c2", False), ([], "c2", False), ([3, 4], "c3", True),
        ([4, 5], "c4", False),
    ]  # fmt: skip

    def page_for(cursor: str | None) -> dict[str, Any]:
        numbers, following, more = script.pop(0)
        return {"items": [event(n) for n in numbers], "nextCursor": following, "hasMore": more}

    api, waited = Pages(page_for), []
    reads = api.client().follow_events(wait=lambda: waited.append(len(api.cursors)))
    assert [e.id for e in islice(reads, 5)] == ["evt-1", "evt-2", "evt-3", "evt-4", "evt-5"]
    assert waited == [1, 2, 3]  # after each read that reached the end, before the next
    assert api.cursors == [None, "c1", "c2", "c2", "c3"]  # the end answers where it is
