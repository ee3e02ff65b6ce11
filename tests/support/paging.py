"""A bound for the tests' paging loops: a cursor that never ends fails the test in a
hundred pages, instead of looping until the run is stopped."""

from __future__ import annotations

from collections.abc import Iterator

MAX_PAGES = 100


def bounded_pages() -> Iterator[int]:
    """Page numbers 0, 1, ...; asking for one more than ``MAX_PAGES`` fails the test."""
    yield from range(MAX_PAGES)
    raise AssertionError(f"a next cursor after {MAX_PAGES} pages: the cursor does not move on")
