"""The list's page cursor: where the next page starts, signed so that a client can neither
forge nor alter it, and bound to the partition, the filter and the caller's org so that it cannot
be replayed on another list. It is a position and nothing else: who may see what is decided
again on every page, never carried over from the first."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from dataclasses import dataclass

from reservations.kernel.errors import FieldProblem, InvalidRequest
from reservations.kernel.settings import MAX_FEED_SHARDS

# Far above any cursor this module makes (ids are at most 128 characters): a longer one is
# refused before any decoding work.
MAX_CURSOR = 1024
# A page's size, every list's alike.
DEFAULT_LIMIT = 50
MAX_LIMIT = 100
# A limit as the lists accept it: decimal 1-100, no sign, no leading zero (the OpenAPI
# document declares it an integer from 1 to 100).
_LIMIT = re.compile(r"[1-9][0-9]?|100")


@dataclass(frozen=True, slots=True)
class CursorScope:
    """What a cursor is valid for: one partition, one status (or event type) filter, one
    caller org; for an event feed also the feed and its ``after``. A plain list leaves those
    two empty, and its cursors carry neither (they read as they always did)."""

    node_id: str
    statuses: str  # the filter, canonical (sorted, comma-joined); empty for none
    org_id: str
    feed: str = ""  # "" for a plain list; the feed's name for an event feed
    after: str = ""  # an event feed's ``after``, canonical; empty for none

    def fields(self) -> dict[str, str]:
        """The payload fields that bind a cursor to this scope."""
        bound = {"n": self.node_id, "s": self.statuses, "o": self.org_id}
        if self.feed:
            bound.update({"f": self.feed, "t": self.after})
        return bound


@dataclass(frozen=True, slots=True)
class Cursor:
    """The next page starts after the item ``after``. A sharded feed's cursor also says
    how many shards it read (shards 0 to ``shards`` - 1, each up to ``after``; a shard
    beyond them is read from the feed's start); None: not a sharded feed's, or given out
    before feeds had shards (it read the feed's one partition, shard 0)."""

    after: str
    shards: int | None = None


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _signature(key: bytes, payload: bytes) -> bytes:
    return hmac.new(key, payload, hashlib.sha256).digest()


def encode_cursor(cursor: Cursor, scope: CursorScope, key: bytes) -> str:
    """``<payload>.<HMAC-SHA256 of payload>``, both base64url."""
    shards = {} if cursor.shards is None else {"k": cursor.shards}
    payload = json.dumps(
        {"a": cursor.after, **shards, **scope.fields()}, separators=(",", ":"), sort_keys=True
    ).encode()
    return f"{_b64(payload)}.{_b64(_signature(key, payload))}"


def decode_cursor(text: str, scope: CursorScope, key: bytes) -> Cursor:
    """The cursor, or 400 naming ``cursor`` when it is malformed, altered or not this list's."""
    try:
        encoded, signature = text.split(".") if len(text) <= MAX_CURSOR else ("", "")
        payload = _unb64(encoded)
        valid = hmac.compare_digest(_signature(key, payload), _unb64(signature))
        fields = json.loads(payload) if valid else {}
    except (ValueError, binascii.Error):  # not two parts, not base64, not JSON
        fields = {}
    expected = {"f": "", "t": "", **scope.fields()}  # a list's cursor is no feed's
    shards = fields.get("k")
    if (
        not fields
        or any(fields.get(name, "") != value for name, value in expected.items())
        or not (shards is None or _shard_count(shards))
    ):
        raise InvalidRequest(
            "cursor is not valid for this list",
            [FieldProblem("cursor", "is not a cursor this list gave out")],
        )
    # A cursor signed before cursors were positions only may say more ("all"): ignored.
    return Cursor(after=str(fields["a"]), shards=shards)


def _shard_count(value: object) -> bool:
    return type(value) is int and 1 <= value <= MAX_FEED_SHARDS


def page_limit(text: str | None) -> int:
    """A list's ``limit``: 1-100, default 50 (absent or given empty); anything else is a 400
    naming it."""
    if not text:
        return DEFAULT_LIMIT
    if not _LIMIT.fullmatch(text):
        raise InvalidRequest(
            f"limit must be an integer from 1 to {MAX_LIMIT}",
            [FieldProblem("limit", f"must be an integer from 1 to {MAX_LIMIT}")],
        )
    return int(text)
