"""A subscription and an attempt as the API shows them: every field, with its optional ones
set and absent (absent, never null), times to the second, and the secret only where a
subscribe or a rotation answers."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from reservations.kernel.wire import response_json
from reservations.webhooks.models.api import SubscriptionView, SubscriptionWithSecret
from reservations.webhooks.models.domain import (
    AttemptResult,
    DeliveryAttempt,
    DeliveryState,
    DeliveryView,
    SigningSecrets,
    Subscription,
    SubscriptionStatus,
)

pytestmark = pytest.mark.disable_socket

AT = datetime(2026, 11, 29, 12, 0, 5, 900000, tzinfo=UTC)
SECRET = "whsec_" + "A" * 44
FULL = Subscription(
    "whsub-1", "org-acme", "https://hooks.example.com/in", SigningSecrets(SECRET, "whsec_old", AT),
    AT - timedelta(days=1), types=frozenset({"workload.terminated", "reservation.created"}),
    description="pager", status=SubscriptionStatus.DISABLED, failing_since=AT - timedelta(days=5),
    disabled_at=AT,
)  # fmt: skip
BARE = Subscription("whsub-2", "org-acme", "https://hooks.example.com/", SigningSecrets(SECRET), AT)


def shown(model: object) -> object:
    return json.loads(response_json(model))  # type: ignore[arg-type]


def test_a_subscription_is_shown_with_every_field_it_has_and_never_its_secret():
    assert shown(SubscriptionView.of(FULL)) == {
        "id": "whsub-1",
        "url": "https://hooks.example.com/in",
        "types": ["reservation.created", "workload.terminated"],
        "description": "pager",
        "status": "disabled",
        "createdAt": "2026-11-28T12:00:05Z",
        "disabledAt": "2026-11-29T12:00:05Z",
    }
    assert shown(SubscriptionView.of(BARE)) == {
        "id": "whsub-2",
        "url": "https://hooks.example.com/",
        "status": "active",
        "createdAt": "2026-11-29T12:00:05Z",
    }


def test_a_subscribe_or_a_rotation_shows_the_current_secret_besides():
    assert shown(SubscriptionWithSecret.with_secret(BARE)) == {
        "id": "whsub-2",
        "url": "https://hooks.example.com/",
        "status": "active",
        "createdAt": "2026-11-29T12:00:05Z",
        "secret": SECRET,
    }
    assert shown(SubscriptionWithSecret.with_secret(FULL))["secret"] == SECRET


def test_an_attempt_is_shown_with_its_next_time_and_without_what_it_lacks():
    retried = DeliveryAttempt(
        "whsub-1", "evt-9", "workload.terminated", 2, AT, AttemptResult(503, "HTTP 503"),
        DeliveryState.PENDING, next_attempt_at=AT + timedelta(minutes=5),
    )  # fmt: skip
    assert shown(DeliveryView.of(retried)) == {
        "eventId": "evt-9", "type": "workload.terminated", "attempt": 2,
        "at": "2026-11-29T12:00:05Z", "status": 503, "error": "HTTP 503",
        "nextAttemptAt": "2026-11-29T12:05:05Z", "state": "pending",
    }  # fmt: skip
    unanswered = DeliveryAttempt(
        "whsub-1", "evt-9", "workload.terminated", 8, AT, AttemptResult(), DeliveryState.FAILED
    )
    assert shown(DeliveryView.of(unanswered)) == {
        "eventId": "evt-9", "type": "workload.terminated", "attempt": 8,
        "at": "2026-11-29T12:00:05Z", "state": "failed",
    }  # fmt: skip
