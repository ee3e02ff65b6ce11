"""Turning an ``Authorization`` header into a :class:`Caller`, or a 401.

Only a key's SHA-256 is stored and looked up. Lookups are cached per container for at most
``ttl`` seconds, which bounds how long a revoked key keeps working.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from datetime import datetime

from reservations.kernel.caller import ApiKey, Caller
from reservations.kernel.errors import Unauthorized

KEY_PREFIX = "vl_"
# Scheme names are case-insensitive (RFC 7235); the token is "vl_" and visible ASCII.
_BEARER = re.compile(r"[Bb][Ee][Aa][Rr][Ee][Rr] +(vl_[\x21-\x7e]{1,512})")

KeyLookup = Callable[[str], ApiKey | None]


def hash_key(key: str) -> str:
    """The stored form of a key: its SHA-256, hex."""
    return hashlib.sha256(key.encode()).hexdigest()


def derive_key_id(key: str) -> str:
    """A stable, non-secret handle for audit and logs (not the stored hash)."""
    return "key-" + hashlib.sha256(b"key-id:" + key.encode()).hexdigest()[:16]


def bearer_token(authorization: str | None) -> str:
    """The ``vl_`` key in a ``Bearer`` header, or 401 for anything else."""
    match = _BEARER.fullmatch(authorization.strip()) if authorization else None
    if match is None:
        raise Unauthorized()
    return match.group(1)


class KeyCache:
    """Positive lookups, kept ``ttl`` seconds; unknown keys are not cached."""

    def __init__(
        self, ttl: float | Callable[[], float] = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        # A callable ttl is read on use: a module-level cache then reads no settings at import.
        self._ttl = ttl
        self._clock = clock
        self._entries: dict[str, tuple[float, ApiKey]] = {}

    def get(self, key_hash: str, lookup: KeyLookup) -> ApiKey | None:
        now = self._clock()
        cached = self._entries.get(key_hash)
        ttl = self._ttl() if callable(self._ttl) else self._ttl
        if cached is not None and now - cached[0] < ttl:
            return cached[1]
        api_key = lookup(key_hash)
        if api_key is None:
            self._entries.pop(key_hash, None)
        else:
            self._entries[key_hash] = (now, api_key)
        return api_key

    def clear(self) -> None:
        self._entries.clear()


def authenticate(
    authorization: str | None, lookup: KeyLookup, cache: KeyCache, now: datetime
) -> Caller:
    """The caller behind the header; 401 when missing, malformed, unknown, revoked or expired."""
    key_hash = hash_key(bearer_token(authorization))
    api_key = cache.get(key_hash, lookup)
    if api_key is None or api_key.revoked:
        raise Unauthorized()
    if api_key.expires_at is not None and now >= api_key.expires_at:
        raise Unauthorized()
    return Caller(
        key_id=api_key.key_id,
        org_id=api_key.org_id,
        permissions=api_key.permissions,
        platform_operator=api_key.platform_operator,
        key_hash=key_hash,
    )
