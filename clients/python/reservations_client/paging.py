"""Iterators that page by themselves.

A list (reservations, workloads, webhooks, deliveries) ends where a page has no
``nextCursor``. A feed (events) is a log whose every page carries a ``nextCursor``, the last
one too, and says with ``hasMore: false`` that it reached the feed's current end.
``follow`` keeps reading past the end, waiting between polls, and yields each event
once (by id: a feed may give one twice).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

Item = TypeVar("Item")
Page = TypeVar("Page")
REMEMBERED_IDS = 10_000  # events seen lately, for deduplication; a feed repeats only recent ones


class ListPage(Protocol[Item]):
    items: list[Item]
    next_cursor: Any  # str or the generated client's UNSET
    additional_properties: dict[str, Any]


def cursor_of(page: ListPage[Any]) -> str | None:
    """The page's ``nextCursor``, or None when absent."""
    cursor = page.next_cursor
    return cursor if isinstance(cursor, str) and cursor else None


def list_items(fetch: Callable[[str | None], ListPage[Item]]) -> Iterator[Item]:
    """Every item of a list, page after page: ``fetch(cursor)`` reads one page."""
    cursor: str | None = None
    while True:
        page = fetch(cursor)
        yield from page.items
        cursor = cursor_of(page)
        if cursor is None:
            return


def at_feed_end(page: ListPage[Any]) -> bool:
    """Whether a feed's page reached the feed's current end."""
    return getattr(page, "has_more", False) is not True or cursor_of(page) is None


def feed_items(fetch: Callable[[str | None], ListPage[Item]]) -> Iterator[Item]:
    """Every event of a feed up to its current end."""
    cursor: str | None = None
    while True:
        page = fetch(cursor)
        yield from page.items
        if at_feed_end(page):
            return
        cursor = cursor_of(page)


def follow(
    fetch: Callable[[str | None], ListPage[Item]],
    identity: Callable[[Item], str],
    wait: Callable[[], None],
) -> Iterator[Item]:
    """Every event of a feed, then each new one as it lands, without end: ``wait()`` is
    called at the feed's end, before the next poll (it sleeps, and may say so)."""
    seen: OrderedDict[str, None] = OrderedDict()
    cursor: str | None = None
    while True:
        page = fetch(cursor)
        for event in page.items:
            if identity(event) not in seen:
                seen[identity(event)] = None
                yield event
        while len(seen) > REMEMBERED_IDS:
            seen.popitem(last=False)
        cursor = cursor_of(page) or cursor
        if at_feed_end(page):
            wait()
