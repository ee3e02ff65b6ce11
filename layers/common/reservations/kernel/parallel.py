"""Independent reads at once: a sharded feed's page reads one Query per shard, and in AWS
each is a few milliseconds of waiting, so 32 of them one after another are most of the page's
time. One pool per container, kept across invocations (boto3 clients are thread-safe)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

# Enough for the widest sharded read (the operator's feed, 32 shards) in two waves; each
# worker mostly waits on the network.
WORKERS = 16


@cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="read")


def each(call: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """``call`` of every item, in the items' order; a single item in this thread. The first
    error raised is raised here (the others' results are dropped)."""
    listed = list(items)
    if len(listed) <= 1:
        return [call(item) for item in listed]
    return list(_pool().map(call, listed))
