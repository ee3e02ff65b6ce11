"""Webhook deliveries, received and (for ``reservations webhooks listen``) signed, by the
Standard Webhooks specification with its reference implementation, ``standardwebhooks``.

A receiver calls :func:`verify_webhook` with the raw body, the request's headers and its
subscription's secret, or both secrets during a rotation's 24 hours::

    event = verify_webhook(request.body, request.headers, [new_secret, old_secret])
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from secrets import token_bytes

from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from reservations_api_client.models import Event
from reservations_client.errors import InvalidWebhook

SECRET_PREFIX = "whsec_"  # noqa: S105 - the format's prefix, not a secret


def verify_webhook(
    body: bytes | str, headers: Mapping[str, str], secrets: str | Sequence[str]
) -> Event:
    """The delivered event, once its signature verifies with one of ``secrets`` and its
    ``webhook-timestamp`` is within 5 minutes of now; else :class:`InvalidWebhook`."""
    given = [secrets] if isinstance(secrets, str) else list(secrets)
    if not given:
        raise InvalidWebhook("no secret to verify with")
    plain = {str(name): str(value) for name, value in headers.items()}
    problem = "no signature made with the given secrets"
    for secret in given:
        try:
            payload = Webhook(secret).verify(body, plain)
        except (WebhookVerificationError, ValueError, binascii.Error) as refused:
            problem = str(refused) or problem
            continue
        return _event(payload)
    raise InvalidWebhook(problem)


def _event(payload: object) -> Event:
    """The typed event a verified body holds."""
    if not isinstance(payload, dict):
        raise InvalidWebhook("the body is not an event object")
    try:
        return Event.from_dict(payload)
    except (KeyError, TypeError, ValueError) as wrong:
        raise InvalidWebhook(f"the body is not an event: {wrong}") from wrong


def new_secret() -> str:
    """A fresh signing secret in the ``whsec_`` form (24 random bytes)."""
    return SECRET_PREFIX + base64.b64encode(token_bytes(24)).decode()


def signed_headers(secret: str, event_id: str, body: str, at: datetime) -> dict[str, str]:
    """The headers of a delivery of ``body`` signed with ``secret``, as the service sends."""
    moment = at.astimezone(UTC)
    return {
        "Content-Type": "application/json",
        "webhook-id": event_id,
        "webhook-timestamp": str(math.floor(moment.timestamp())),
        "webhook-signature": Webhook(secret).sign(event_id, moment, body),
    }
