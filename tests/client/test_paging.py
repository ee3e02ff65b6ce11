"""Iterators that page by themselves: a list ends where a page has no nextCursor (usage rows
too, their query sent with every page); a feed ends on hasMore false (or, from a server that
sends no hasMore, on a page without nextCursor or items); a followed feed waits at its end
and yields each event once."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from itertools import islice
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest

from reservations_client import NO_RETRIES, InvalidRequest, Reservations

PageFor = Callable[[str | None], dict[str, Any]]


def event(number: int) -> dict[str, Any]:
    return {"specversion": "1.0", "id": f"evt-{number}", "type": "reservation.reclaimed",
            "source": "/v1/nodes/node-a1", "subject": "reservations/res-1",
            "time": "2026-12-01T05:08:47.123Z", "datacontenttype": "application/json",
            "data": {}}  # fmt: skip


def subscription(number: int) -> dict[str, Any]:
    return {"id": f"wh-{number}", "url": "https://hooks.example/x", "status": "active",
            "createdAt": "2026-12-01T00:00:00Z"}  # fmt: skip


H = 3_600_000  # an hour, in ms


def usage_row(hour: int) -> dict[str, Any]:
    """An hour of node-u as GET /v1/usage writes it; a state a newer API adds, at 07:00."""
    start = f"2026-12-01T{hour:02d}:00:00Z"
    figures = {"review": 0, "reclaiming": 0, "lent_used": H, "lent_idle": 0, "reserved_used": 0,
               "reserved_idle": 0, "open_used": 0, "open_idle": 2 * H}  # fmt: skip
    if hour == 7:
        figures |= {"lent_used": 0, "lent_draining": H}
    return {"id": f"node-u/hour/{start}", "nodeId": "node-u", "start": start,
            "end": f"2026-12-01T{hour + 1:02d}:00:00Z", "unitMs": figures,
            "gpuMs": figures | {"open_idle": 3 * H}, "asOf": "2026-12-02T00:00:05.000Z",
            "final": True, "revision": 1}  # fmt: skip


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
        page = self.page_for(cursor)
        return httpx.Response(page.pop("status", 200), json=page)

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


def test_usage_is_read_to_the_page_without_a_cursor_with_its_query_on_every_page():
    def page_for(cursor: str | None) -> dict[str, Any]:
        first = int(cursor or 0)
        page: dict[str, Any] = {"items": [usage_row(h) for h in range(first, min(first + 10, 23))]}
        return page | ({"nextCursor": str(first + 10)} if first + 10 < 23 else {})

    api = Pages(page_for)
    rows = list(api.client().iter_usage(
        from_="2026-12-01T00:00:00Z", to=datetime(2026, 12, 2, tzinfo=UTC), granularity="hour",
        group_by="node", node_ids=["node-u", "node-v"], page_size=10))  # fmt: skip
    assert [r.id for r in rows] == [usage_row(h)["id"] for h in range(23)]
    assert api.cursors == [None, "10", "20"]
    for query in api.queries:  # the cursor's own query, every time
        assert (query["from"], query["to"]) == (["2026-12-01T00:00:00+00:00"],
                                                ["2026-12-02T00:00:00+00:00"])  # fmt: skip
        assert (query["granularity"], query["groupBy"]) == (["hour"], ["node"])
        assert query["nodeId"] == ["node-u,node-v"]  # one parameter, comma-separated
        assert query["limit"] == ["10"]
        assert "reservationId" not in query
    assert (rows[3].gpu_ms.lent_used, rows[3].gpu_ms.open_idle) == (H, 3 * H)
    assert rows[3].as_of == datetime(2026, 12, 2, 0, 0, 5, tzinfo=UTC)
    # A state this version does not know is kept, in the row's figures and in its JSON.
    assert rows[7].unit_ms["lent_draining"] == rows[7].gpu_ms["lent_draining"] == H
    assert rows[7].to_dict()["gpuMs"]["lent_draining"] == H


def test_usage_by_reservation_names_them_once_and_a_bad_period_raises_the_apis_400():
    refusal = {"status": 400, "error": "from must be a whole UTC day (granularity day)",
               "code": "invalid_request", "requestId": "r-1",
               "details": [{"field": "from", "problem": "must be a whole UTC day"}]}  # fmt: skip
    api = Pages(lambda cursor: dict(refusal))
    with pytest.raises(InvalidRequest) as refused:
        list(api.client().iter_usage(from_="2026-12-01T12:00:00Z", to="2026-12-02T00:00:00Z",
                                     group_by="reservation", reservation_ids="res-1,res-2"))  # fmt: skip
    assert (refused.value.status, refused.value.details[0]["field"]) == (400, "from")
    assert str(refused.value.message).startswith("from must be a whole UTC day")
    (query,) = api.queries
    assert (query["groupBy"], query["reservationId"]) == (["reservation"], ["res-1,res-2"])
    assert query["from"] == ["2026-12-01T12:00:00+00:00"]  # the API judges it, not the client
