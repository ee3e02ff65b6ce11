"""Webhook rules: the retry schedule, what a message does, when a subscription is disabled,
secrets and their rotation, and the Standard Webhooks signature (verified by the package's
own verifier)."""

from __future__ import annotations

import base64
import json
import time
from datetime import UTC, datetime, timedelta, timezone

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from reservations.kernel.ids import is_resource_id
from reservations.webhooks.models.domain import (
    AttemptResult,
    Delivery,
    DeliveryRequest,
    DeliveryState,
    SigningSecrets,
    Subscription,
    SubscriptionStatus,
    is_secret,
    new_secret,
    new_subscription_id,
)
from reservations.webhooks.rules.attempts import (
    DISABLE_AFTER,
    MAX_ATTEMPTS,
    Health,
    Send,
    Skip,
    Wait,
    after_attempt,
    health_after,
    plan,
    retry_delay,
)
from reservations.webhooks.rules.signing import delivery_headers, signature

pytestmark = pytest.mark.disable_socket

NOW = datetime(2026, 12, 1, 5, 8, 47, tzinfo=UTC)
SECRET = "whsec_" + base64.b64encode(bytes(range(32))).decode()
OTHER = "whsec_" + base64.b64encode(bytes(range(100, 132))).decode()
BODY = '{"specversion":"1.0","id":"evt-1","type":"reservation.reclaimed","data":{}}'


def subscription(**overrides: object) -> Subscription:
    fields: dict[str, object] = {
        "id": "whsub-abc",
        "org_id": "org-broker",
        "url": "https://hooks.example.com/in",
        "secrets": SigningSecrets(SECRET),
        "created_at": NOW - timedelta(days=30),
        **overrides,
    }
    return Subscription(**fields)  # type: ignore[arg-type]


def request(event_type: str = "reservation.reclaimed") -> DeliveryRequest:
    return DeliveryRequest(
        subscriptionId="whsub-abc", orgId="org-broker", eventId="evt-1", eventType=event_type,
        body=BODY,
    )  # fmt: skip


def delivery(**overrides: object) -> Delivery:
    fields: dict[str, object] = {
        "subscription_id": "whsub-abc",
        "event_id": "evt-1",
        "event_type": "reservation.reclaimed",
        "body": BODY,
        **overrides,
    }
    return Delivery(**fields)  # type: ignore[arg-type]


# --- the schedule ---------------------------------------------------------------------------

SCHEDULE = [5, 300, 1800, 7200, 18000, 36000, 36000]


@pytest.mark.parametrize(("attempt", "seconds"), list(enumerate(SCHEDULE, start=1)))
def test_each_failed_attempt_is_retried_after_about_the_contracts_delay(attempt, seconds):
    assert retry_delay(attempt, 0.5) == timedelta(seconds=seconds)
    assert retry_delay(attempt, 0.0) == timedelta(seconds=seconds * 0.9)
    for jitter in (0.0, 0.25, 0.75, 0.999999):
        delay = retry_delay(attempt, jitter)
        assert delay is not None
        assert timedelta(seconds=seconds * 0.9) <= delay <= timedelta(seconds=seconds * 1.1)


def test_there_are_eight_attempts_then_none():
    assert MAX_ATTEMPTS == 8
    assert retry_delay(8, 0.5) is None
    assert retry_delay(9, 0.5) is None  # an attempt by hand past the schedule
    assert retry_delay(0, 0.5) is None


def test_the_whole_schedule_takes_about_28_hours():
    total = sum((retry_delay(n, 0.5) for n in range(1, 8)), timedelta())
    assert total == timedelta(hours=27, minutes=35, seconds=5)


@pytest.mark.parametrize(
    ("result", "attempt", "state", "next_in"),
    [
        (AttemptResult(status=200), 1, DeliveryState.DELIVERED, None),
        (AttemptResult(status=204), 5, DeliveryState.DELIVERED, None),
        (AttemptResult(status=299), 8, DeliveryState.DELIVERED, None),
        (AttemptResult(status=500), 1, DeliveryState.PENDING, timedelta(seconds=5)),
        (AttemptResult(status=302, error="redirects are not followed"), 2,
         DeliveryState.PENDING, timedelta(minutes=5)),
        (AttemptResult(status=199), 3, DeliveryState.PENDING, timedelta(minutes=30)),
        (AttemptResult(error="no answer within 10 s"), 7, DeliveryState.PENDING,
         timedelta(hours=10)),
        (AttemptResult(error="connection failed: refused"), 8, DeliveryState.FAILED, None),
        (AttemptResult(status=500), 9, DeliveryState.FAILED, None),
    ],
)  # fmt: skip
def test_an_attempt_delivers_only_on_2xx_and_fails_after_the_last(result, attempt, state, next_in):
    before = None if attempt == 1 else delivery(attempts=attempt - 1)
    after, record = after_attempt(before, request(), attempt, result, NOW, 0.5)
    assert (after.state, record.state) == (state, state)
    assert after.attempts == record.attempt == attempt
    assert after.last_attempt_at == record.at == NOW
    expected = None if next_in is None else NOW + next_in
    assert after.next_attempt_at == record.next_attempt_at == expected
    assert after.body == BODY
    assert record.result == result


# --- what a message does ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sub", "known", "expected"),
    [
        (None, None, Skip("the subscription no longer exists")),
        (subscription(), None, Send(1)),
        (subscription(), delivery(attempts=2, next_attempt_at=NOW - timedelta(seconds=1)), Send(3)),
        (subscription(), delivery(attempts=2, next_attempt_at=NOW), Send(3)),
        (subscription(), delivery(attempts=2, next_attempt_at=NOW + timedelta(hours=2)),
         Wait(NOW + timedelta(hours=2))),
        (subscription(), delivery(attempts=3, state=DeliveryState.DELIVERED),
         Skip("already delivered")),
        (subscription(), delivery(attempts=8, state=DeliveryState.FAILED), Skip("already failed")),
        (subscription(status=SubscriptionStatus.DISABLED), None,
         Skip("the subscription is disabled")),
        (subscription(status=SubscriptionStatus.DISABLED), delivery(attempts=1),
         Skip("the subscription is disabled", abandon=True)),
        (subscription(types=frozenset({"workload.placed"})), None,
         Skip("the subscription no longer takes reservation.reclaimed")),
        (subscription(types=frozenset({"workload.placed"})), delivery(attempts=1),
         Skip("the subscription no longer takes reservation.reclaimed", abandon=True)),
        (subscription(types=frozenset({"reservation.reclaimed"})), None, Send(1)),
    ],
)  # fmt: skip
def test_a_message_sends_the_next_attempt_only_when_due(sub, known, expected):
    assert plan(sub, known, request(), NOW) == expected


# --- disabling ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("failing_since", "delivered", "health"),
    [
        (None, True, Health.UNCHANGED),
        (NOW - timedelta(days=1), True, Health.RECOVERED),
        (None, False, Health.FAILING),
        (NOW - timedelta(days=4, hours=23), False, Health.UNCHANGED),
        (NOW - DISABLE_AFTER, False, Health.DISABLED),
        (NOW - timedelta(days=9), False, Health.DISABLED),
        (NOW - timedelta(days=9), True, Health.RECOVERED),
    ],
)
def test_five_days_of_failures_disable_a_subscription(failing_since, delivered, health):
    assert timedelta(days=5) == DISABLE_AFTER
    assert health_after(subscription(failing_since=failing_since), delivered, NOW) is health


# --- ids and secrets -------------------------------------------------------------------------


def test_a_subscription_id_is_a_path_id_with_its_prefix():
    made = {new_subscription_id() for _ in range(50)}
    assert len(made) == 50
    assert all(i.startswith("whsub-") and len(i) == 26 and is_resource_id(i) for i in made)


def test_a_secret_is_whsec_and_the_base64_of_32_random_bytes_a_verifier_accepts():
    secret = new_secret()
    assert secret.startswith("whsec_")
    assert is_secret(secret)
    assert len(base64.b64decode(secret.removeprefix("whsec_"))) == 32
    assert new_secret() != secret
    assert new_secret(lambda n: b"\x01" * n) == "whsec_" + base64.b64encode(b"\x01" * 32).decode()
    Webhook(secret)  # the package takes it


@pytest.mark.parametrize(
    "value",
    ["", "whsec_", "whsec_!!!!", "sk_" + SECRET[6:], "whsec_" + base64.b64encode(b"x" * 8).decode(),
     "whsec_" + base64.b64encode(b"x" * 65).decode(), SECRET[:12] + "!" + SECRET[12:]],
)  # fmt: skip
def test_what_is_not_a_secret(value):
    assert not is_secret(value)


def test_a_rotation_keeps_the_old_secret_signing_for_24_hours_then_only_the_new():
    rotated = SigningSecrets(SECRET).rotated(OTHER, NOW)
    assert rotated.in_force(NOW) == (OTHER, SECRET)
    assert rotated.in_force(NOW + timedelta(hours=23, minutes=59)) == (OTHER, SECRET)
    assert rotated.in_force(NOW + timedelta(hours=24)) == (OTHER,)
    third = "whsec_" + base64.b64encode(b"z" * 32).decode()
    assert rotated.rotated(third, NOW).in_force(NOW) == (third, OTHER)  # the oldest ends


# --- signing -------------------------------------------------------------------------------


def test_headers_verify_with_the_standard_webhooks_package():
    at = datetime.now(UTC)  # the verifier refuses timestamps 5 minutes off its own clock
    headers = delivery_headers((SECRET,), "evt-1", at, BODY)
    assert headers["webhook-id"] == "evt-1"
    assert headers["webhook-timestamp"] == str(int(at.timestamp()))
    assert headers["webhook-signature"].startswith("v1,")
    assert headers["Content-Type"] == "application/json"
    assert Webhook(SECRET).verify(BODY, headers) == {
        "specversion": "1.0", "id": "evt-1", "type": "reservation.reclaimed", "data": {},
    }  # fmt: skip
    with pytest.raises(WebhookVerificationError):
        Webhook(OTHER).verify(BODY, headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(SECRET).verify(BODY.replace("evt-1", "evt-2"), headers)


def test_a_delivery_carries_exactly_these_headers():
    assert delivery_headers((SECRET,), "evt-1", NOW, BODY) == {
        "Content-Type": "application/json",
        "User-Agent": "gpu-reservations-webhooks/1",
        "webhook-id": "evt-1",
        "webhook-timestamp": str(int(NOW.timestamp())),
        "webhook-signature": signature((SECRET,), "evt-1", NOW, BODY),
    }


def test_the_signature_is_of_the_utc_moment_whatever_the_machines_time_zone(monkeypatch):
    # The package signs the wall-clock time as if it were UTC: a local one would be off.
    expected = Webhook(SECRET).sign("evt-1", NOW, BODY)
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        tokyo = NOW.astimezone(timezone(timedelta(hours=9)))
        assert signature((SECRET,), "evt-1", tokyo, BODY) == expected
    finally:
        monkeypatch.undo()
        time.tzset()


def test_during_a_rotation_two_signatures_and_either_secret_verifies():
    at = datetime.now(UTC)
    headers = delivery_headers((OTHER, SECRET), "evt-1", at, BODY)
    assert len(headers["webhook-signature"].split(" ")) == 2
    Webhook(OTHER).verify(BODY, headers)
    Webhook(SECRET).verify(BODY, headers)


def test_the_signature_is_the_specifications_hmac_over_id_timestamp_body():
    import hashlib
    import hmac

    key = base64.b64decode(SECRET.removeprefix("whsec_"))
    mac = hmac.new(key, f"evt-1.{int(NOW.timestamp())}.{BODY}".encode(), hashlib.sha256)
    assert (
        signature((SECRET,), "evt-1", NOW, BODY) == "v1," + base64.b64encode(mac.digest()).decode()
    )


def test_an_attempt_in_the_listing_has_the_contracts_fields_absent_rather_than_null():
    from reservations.kernel.wire import response_json
    from reservations.webhooks.models.domain import DeliveryPage, DeliveryView

    failed, _ = after_attempt(None, request(), 1, AttemptResult(error="no answer"), NOW, 0.5)
    _, record = after_attempt(None, request(), 1, AttemptResult(error="no answer"), NOW, 0.5)
    _, delivered = after_attempt(failed, request(), 2, AttemptResult(status=204), NOW, 0.5)
    page = DeliveryPage(items=[DeliveryView.of(delivered), DeliveryView.of(record)])
    assert json.loads(response_json(page)) == {
        "items": [
            {"eventId": "evt-1", "type": "reservation.reclaimed", "attempt": 2,
             "at": "2026-12-01T05:08:47Z", "status": 204, "state": "delivered"},
            {"eventId": "evt-1", "type": "reservation.reclaimed", "attempt": 1,
             "at": "2026-12-01T05:08:47Z", "error": "no answer",
             "nextAttemptAt": "2026-12-01T05:08:52Z", "state": "pending"},
        ]
    }  # fmt: skip


@pytest.mark.parametrize(
    ("known", "retry_of", "expected"),
    [
        # A retry by hand of a failed delivery, as it still stands: one more attempt.
        (delivery(state=DeliveryState.FAILED, attempts=8), 8, Send(attempt=9)),
        (delivery(state=DeliveryState.FAILED, attempts=9), 9, Send(attempt=10)),
        # Its copy after that attempt was recorded (or an older retry): nothing.
        (delivery(state=DeliveryState.FAILED, attempts=9), 8, Skip("already failed")),
        (delivery(state=DeliveryState.DELIVERED, attempts=9), 8, Skip("already delivered")),
        (delivery(state=DeliveryState.FAILED, attempts=8), None, Skip("already failed")),
    ],
)
def test_a_retry_by_hand_sends_once_more_only_what_is_failed_as_it_named(known, retry_of, expected):
    asked = request().model_copy(update={"retry_of": retry_of})
    assert plan(subscription(), known, asked, NOW) == expected


def test_a_retrys_message_names_the_attempts_and_an_ordinary_one_does_not():
    assert request().to_json() == (
        '{"version":1,"subscriptionId":"whsub-abc","orgId":"org-broker","eventId":"evt-1",'
        '"eventType":"reservation.reclaimed","body":' + json.dumps(BODY) + "}"
    )
    asked = request().model_copy(update={"retry_of": 8})
    assert DeliveryRequest.model_validate_json(asked.to_json()).retry_of == 8
