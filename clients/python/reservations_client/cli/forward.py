"""``webhooks listen --forward-to``: each new event of the org's feed, signed with a secret
of this session, posted to a receiver on this machine. Loopback targets only: the command
must never become a way to make requests to other hosts."""

from __future__ import annotations

import ipaddress
import json
from datetime import UTC, datetime
from urllib.parse import urlsplit

import httpx

from reservations_api_client.models import Event
from reservations_client.webhooks import signed_headers
from reservations_client.wire import api_json

LOCAL_NAMES = frozenset({"localhost"})
SEND_SECONDS = 10.0  # as the service waits for an endpoint


class NotLoopback(ValueError):
    """A --forward-to that is not http(s) to 127.0.0.0/8, ::1 or localhost."""


def loopback_target(url: str) -> str:
    """``url`` when it is http(s) to a loopback address; else :class:`NotLoopback`. Names
    other than ``localhost`` are refused without a look-up: what a name resolves to can
    change between a check and the send."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme not in {"http", "https"} or not host:
        raise NotLoopback(f"{url!r}: give an http:// or https:// URL of a local receiver")
    if host in LOCAL_NAMES:
        return url
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise NotLoopback(f"{url!r}: only loopback receivers (127.0.0.1, [::1], localhost)")
    return url


def forward(http: httpx.Client, target: str, secret: str, event: Event) -> str:
    """Post one event, signed, as the service delivers it (its JSON, times with ``Z``); what
    came back, in a word (the status, or why none)."""
    body = json.dumps(api_json(event), separators=(",", ":"))
    headers = signed_headers(secret, event.id, body, datetime.now(UTC))
    try:
        answer = http.post(target, content=body, headers=headers)
    except httpx.HTTPError as failed:
        return f"failed: {type(failed).__name__}"
    return str(answer.status_code)


def sender() -> httpx.Client:
    """No proxy from the environment (loopback must stay loopback), no redirects."""
    return httpx.Client(timeout=SEND_SECONDS, follow_redirects=False, trust_env=False)
