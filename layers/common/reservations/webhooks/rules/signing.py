"""A delivery's headers, signed by the Standard Webhooks specification with its reference
implementation (``standardwebhooks``), never a hand-rolled HMAC format.

``webhook-id`` is the event's id (receivers deduplicate by it: a delivery may arrive more
than once), ``webhook-timestamp`` the attempt's time in Unix seconds (each attempt is signed
anew, so a retry hours later is not refused as too old), and ``webhook-signature`` one
``v1,<base64 HMAC-SHA256 of id.timestamp.body>`` per secret in force, space-separated:
two during a rotation's overlap, so a receiver with either secret verifies it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime

from standardwebhooks import Webhook

USER_AGENT = "gpu-reservations-webhooks/1"


def signature(secrets: Sequence[str], message_id: str, at: datetime, body: str) -> str:
    """The ``webhook-signature`` header: one signature per secret, the current one first."""
    moment = at.astimezone(UTC)
    return " ".join(Webhook(secret).sign(message_id, moment, body) for secret in secrets)


def delivery_headers(
    secrets: Sequence[str], event_id: str, at: datetime, body: str
) -> dict[str, str]:
    """Every header a delivery carries besides ``Host`` and ``Content-Length``."""
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "webhook-id": event_id,
        "webhook-timestamp": str(math.floor(at.timestamp())),
        "webhook-signature": signature(secrets, event_id, at, body),
    }
