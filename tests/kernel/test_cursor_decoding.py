"""A page cursor reads back as the position it was made with, only on the list it was made
for (node, filter, org; a feed's also its feed and ``after``), and anything else - altered,
forged, another list's, not a cursor at all, longer than any cursor made - is the one 400
naming ``cursor``, never a 500."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import replace

import pytest

from reservations.kernel.cursors import (
    MAX_CURSOR,
    Cursor,
    CursorScope,
    _b64,
    _signature,
    decode_cursor,
    encode_cursor,
)
from reservations.kernel.errors import FieldProblem, InvalidRequest

pytestmark = pytest.mark.disable_socket

KEY = b"k" * 32
LIST = CursorScope("node-a", "active", "org-lab")
FEED = CursorScope("node-a", "", "org-lab", "node-events", "2026-11-30T12:00:00.000Z#~")


def refused(text: str, scope: CursorScope) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as error:
        decode_cursor(text, scope, KEY)
    return error.value


def signed(fields: dict[str, str]) -> str:
    """A cursor with exactly these fields, signed with the key (as if made by the service)."""
    payload = json.dumps(fields, separators=(",", ":"), sort_keys=True).encode()
    return f"{_b64(payload)}.{_b64(_signature(KEY, payload))}"


def test_a_cursor_reads_back_on_its_own_list_and_feed_only():
    for scope in (LIST, FEED):
        assert decode_cursor(encode_cursor(Cursor("res-9"), scope, KEY), scope, KEY) == Cursor(
            "res-9"
        )
    # A feed's cursor on the list of the same node, filter and org, and the other way round.
    as_list = CursorScope(FEED.node_id, FEED.statuses, FEED.org_id)
    assert refused(encode_cursor(Cursor("p"), FEED, KEY), as_list)
    assert refused(encode_cursor(Cursor("p"), as_list, KEY), FEED)
    # A feed's cursor without ``after``: only its feed tells it from the list's.
    no_after = replace(FEED, after="")
    assert refused(encode_cursor(Cursor("p"), no_after, KEY), as_list)
    # Each bound field on its own.
    for other in (
        CursorScope("node-b", "active", "org-lab"),
        CursorScope("node-a", "pending", "org-lab"),
        CursorScope("node-a", "active", "org-other"),
    ):
        assert refused(encode_cursor(Cursor("p"), LIST, KEY), other)


def test_every_bad_cursor_is_the_same_400_naming_cursor():
    good = encode_cursor(Cursor("res-9"), LIST, KEY)
    payload, signature = good.split(".")
    for text in (
        "garbage",
        "a.b.c",
        f"{payload}.{signature[:-2]}AA",  # altered signature
        f"{_b64(b'{}')}.{signature}",  # another payload
        f"{payload}.{_b64(_signature(b'x' * 32, b'?'))}",  # signed with another key
        f"{_b64(b'not json')}.{_b64(_signature(KEY, b'not json'))}",
        good + "A" * (MAX_CURSOR + 1 - len(good)),  # longer than any cursor made
    ):
        error = refused(text, LIST)
        assert error.message == "cursor is not valid for this list"
        assert error.details == [FieldProblem("cursor", "is not a cursor this list gave out")]
    # An empty scope (no node, filter or org) expects only empty fields: still a 400.
    assert refused("garbage", CursorScope("", "", ""))


def test_a_cursor_of_the_longest_allowed_length_is_read():
    """A cursor up to MAX_CURSOR characters is decoded (a long node id and ``after``)."""
    after = "x" * 600
    text = encode_cursor(Cursor(after), LIST, KEY)
    grow = 0
    while len(text) < MAX_CURSOR:
        grow += 1
        text = encode_cursor(Cursor(after + "y" * grow), LIST, KEY)
    assert len(text) == MAX_CURSOR
    assert decode_cursor(text, LIST, KEY) == Cursor(after + "y" * grow)


def test_a_cursor_is_its_compact_sorted_payload_and_that_payloads_hmac_in_base64url():
    """What a client holds between pages, byte for byte: a cursor given out before a deploy
    reads back after it, and it stays short (well under MAX_CURSOR)."""
    payload = b'{"a":"res-9","n":"node-a","o":"org-lab","s":"active"}'
    signature = hmac.new(KEY, payload, hashlib.sha256).digest()

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).decode().rstrip("=")

    assert encode_cursor(Cursor("res-9"), LIST, KEY) == f"{b64(payload)}.{b64(signature)}"


def test_a_list_cursor_that_carries_a_feeds_after_is_refused():
    # Signed, yet no cursor of this list: the list's have neither a feed nor its ``after``.
    fields = {"a": "p", **LIST.fields()}
    assert refused(signed({**fields, "t": "2026-11-30T12:00:00.000Z#~"}), LIST)
    assert decode_cursor(signed(fields), LIST, KEY) == Cursor("p")
