"""Spreading a partition that would take too many writes a second over several: the shard
a key goes to, the same in every process and every deploy (``docs/scale.md``)."""

from __future__ import annotations

import hashlib


def shard_of(key: str, shards: int) -> int:
    """Which of ``shards`` shards ``key`` goes to: the first 8 bytes of its SHA-256, modulo
    the count (never Python's ``hash``, which is salted per process)."""
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:8], "big") % shards
