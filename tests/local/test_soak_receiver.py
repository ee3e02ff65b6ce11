"""The soak's webhook receiver keeps a delivery only when its signature verifies with the
subscription's secret, as a receiver must; the others it refuses (400: the sender tries
again) and counts, so a signing fault shows as events missed."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import httpx
import pytest
from standardwebhooks import Webhook

from devstack.net import free_port
from devstack.soak.followers import WebhookReceiver

pytestmark = pytest.mark.allow_hosts(["127.0.0.1"])

SECRET = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"  # local-only, made up for this test


def post(receiver: WebhookReceiver, event_id: str, secret: str) -> int:
    body = json.dumps({"id": event_id, "type": "reservation.released"})
    now = datetime.now(UTC)
    signature = Webhook(secret).sign(event_id, now, body)
    headers = {
        "webhook-id": event_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signature,
        "content-type": "application/json",
    }
    return httpx.post(
        f"http://127.0.0.1:{receiver.port}/", content=body, headers=headers
    ).status_code


def test_only_a_verified_delivery_counts_as_received():
    receiver = WebhookReceiver(free_port())
    receiver.secret = SECRET
    try:
        assert post(receiver, "evt-signed", SECRET) == 204
        other = "whsec_" + "c2VjcmV0LW9mLWFub3RoZXItc3Vic2NyaXB0aW9u"
        assert post(receiver, "evt-forged", other) == 400
    finally:
        receiver.down()
    assert receiver.received() == ["evt-signed"]
    assert receiver.unverified == 1
