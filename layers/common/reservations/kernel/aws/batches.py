"""Batches of a request that AWS bounds by count and by bytes alike: EventBridge's
``PutEvents`` takes 10 entries of at most 256 KB in all, SQS's ``SendMessageBatch`` 10
messages of at most 256 KiB in all. A batch cut by count alone fails whole once its entries
are large (ten changes each naming 50 long org ids), so each is cut by both."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")

# What a request of 10 may carry in all, less a margin for what the count leaves out.
MAX_BATCH_BYTES = 250_000


def sized_batches(
    values: Sequence[T], size_of: Callable[[T], int], count: int, max_bytes: int = MAX_BATCH_BYTES
) -> Iterator[list[T]]:
    """``values`` in order, in batches of at most ``count`` whose sizes add up to at most
    ``max_bytes`` (a value larger than that alone is a batch of its own: AWS refuses it,
    and it fails alone)."""
    batch: list[T] = []
    used = 0
    for value in values:
        size = size_of(value)
        if batch and (len(batch) == count or used + size > max_bytes):
            yield batch
            batch, used = [], 0
        batch.append(value)
        used += size
    if batch:
        yield batch
