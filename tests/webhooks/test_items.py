"""The webhook layout in the table: each item's key and every attribute it writes, exactly,
and what reading it back gives, with every optional field set and with each one absent."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, timezone

import pytest

from reservations.webhooks.models.domain import (
    AttemptResult,
    Delivery,
    DeliveryAttempt,
    DeliveryState,
    SigningSecrets,
    Subscription,
    SubscriptionStatus,
)
from reservations.webhooks.table.items import (
    attempt_from_item,
    attempt_item,
    counter_key,
    delivery_from_item,
    delivery_item,
    delivery_key,
    expires_epoch,
    stamp,
    subscription_from_item,
    subscription_item,
    subscription_key,
)

pytestmark = pytest.mark.disable_socket

AT = datetime(2026, 11, 29, 12, 0, 5, 123456, tzinfo=UTC)
CURRENT = "whsec_" + "A" * 44
PREVIOUS = "whsec_" + "B" * 44
DAY = 86_400

FULL = Subscription(
    id="whsub-full",
    org_id="org-acme",
    url="https://hooks.example.com/in?x=1",
    secrets=SigningSecrets(CURRENT, PREVIOUS, AT + timedelta(hours=24)),
    created_at=AT - timedelta(days=9),
    types=frozenset({"workload.terminated", "reservation.created", "unit.released"}),
    description="the lab's pager",
    status=SubscriptionStatus.DISABLED,
    failing_since=AT - timedelta(days=5),
    disabled_at=AT,
)
BARE = Subscription(
    id="whsub-bare", org_id="org-acme", url="https://hooks.example.com/",
    secrets=SigningSecrets(CURRENT), created_at=AT,
)  # fmt: skip


def test_times_are_utc_to_the_millisecond_with_a_z():
    assert stamp(AT) == "2026-11-29T12:00:05.123Z"
    east = datetime(2026, 11, 29, 14, 0, 0, 999999, tzinfo=timezone(timedelta(hours=2)))
    assert stamp(east) == "2026-11-29T12:00:00.999Z"
    assert expires_epoch(AT, 90) == int(AT.timestamp()) + 90 * DAY


def test_times_are_utc_whatever_the_machines_time_zone(monkeypatch):
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        assert stamp(AT) == "2026-11-29T12:00:05.123Z"
    finally:
        monkeypatch.undo()
        time.tzset()


def test_the_keys_of_a_subscription_its_org_counter_and_a_delivery():
    assert subscription_key("org-acme", "whsub-1") == {"PK": "ORGHOOK#org-acme", "SK": "WH#whsub-1"}
    assert counter_key("org-acme") == {"PK": "ORGHOOK#org-acme", "SK": "COUNT"}
    assert delivery_key("whsub-1", "evt-9") == {"PK": "WHDELIV#whsub-1", "SK": "EVT#evt-9"}


def test_a_subscription_with_every_field_is_written_as_such_and_read_back_equal():
    item = subscription_item(FULL)
    assert item == {
        "PK": "ORGHOOK#org-acme",
        "SK": "WH#whsub-full",
        "id": "whsub-full",
        "orgId": "org-acme",
        "url": "https://hooks.example.com/in?x=1",
        "types": ["reservation.created", "unit.released", "workload.terminated"],
        "description": "the lab's pager",
        "status": "disabled",
        "secret": CURRENT,
        "previousSecret": PREVIOUS,
        "previousSecretExpiresAt": "2026-11-30T12:00:05.123Z",
        "createdAt": "2026-11-20T12:00:05.123Z",
        "failingSince": "2026-11-24T12:00:05.123Z",
        "disabledAt": "2026-11-29T12:00:05.123Z",
    }
    millisecond = timedelta(microseconds=456)
    assert subscription_from_item(item) == Subscription(
        id=FULL.id, org_id=FULL.org_id, url=FULL.url,
        secrets=SigningSecrets(CURRENT, PREVIOUS, AT + timedelta(hours=24) - millisecond),
        created_at=FULL.created_at - millisecond, types=FULL.types,
        description=FULL.description, status=SubscriptionStatus.DISABLED,
        failing_since=AT - timedelta(days=5) - millisecond, disabled_at=AT - millisecond,
    )  # fmt: skip


def test_a_subscription_without_its_optional_fields_writes_nulls_and_reads_back_equal():
    item = subscription_item(BARE)
    assert item["types"] is None
    for name in ("description", "previousSecret", "previousSecretExpiresAt", "failingSince",
                 "disabledAt"):  # fmt: skip
        assert item[name] is None
    assert item["status"] == "active"
    assert subscription_from_item(item) == Subscription(
        id=BARE.id, org_id=BARE.org_id, url=BARE.url, secrets=SigningSecrets(CURRENT),
        created_at=AT - timedelta(microseconds=456),
    )  # fmt: skip


def test_a_subscription_item_lacking_the_optional_attributes_reads_as_an_active_one():
    item = {
        "PK": "ORGHOOK#org-acme", "SK": "WH#whsub-old", "id": "whsub-old",
        "orgId": "org-acme", "url": "https://hooks.example.com/", "secret": CURRENT,
        "createdAt": "2026-11-29T12:00:05.123Z",
    }  # fmt: skip
    read = subscription_from_item(item)
    assert read.status is SubscriptionStatus.ACTIVE
    assert read.types is None
    assert read.description is None
    assert read.secrets == SigningSecrets(CURRENT, None, None)
    assert (read.failing_since, read.disabled_at) == (None, None)
    assert read.created_at == datetime(2026, 11, 29, 12, 0, 5, 123000, tzinfo=UTC)


def test_types_read_from_the_table_are_a_set_of_strings():
    item = {**subscription_item(BARE), "types": ["workload.terminated", "unit.released"]}
    assert subscription_from_item(item).types == frozenset({"workload.terminated", "unit.released"})
    assert subscription_from_item({**item, "types": []}).types == frozenset()


def test_a_delivery_attempted_is_written_with_its_times_and_expiry_and_read_back():
    delivery = Delivery(
        "whsub-1", "evt-9", "workload.terminated", '{"id":"evt-9"}', DeliveryState.PENDING,
        attempts=3, last_attempt_at=AT, next_attempt_at=AT + timedelta(minutes=5),
    )  # fmt: skip
    item = delivery_item(delivery, 30)
    assert item == {
        "PK": "WHDELIV#whsub-1",
        "SK": "EVT#evt-9",
        "eventId": "evt-9",
        "type": "workload.terminated",
        "body": '{"id":"evt-9"}',
        "state": "pending",
        "attempts": 3,
        "lastAttemptAt": "2026-11-29T12:00:05.123Z",
        "nextAttemptAt": "2026-11-29T12:05:05.123Z",
        "expiresAtEpoch": int(AT.timestamp()) + 30 * DAY,
    }
    millisecond = timedelta(microseconds=456)
    assert delivery_from_item("whsub-1", item) == Delivery(
        "whsub-1", "evt-9", "workload.terminated", '{"id":"evt-9"}', DeliveryState.PENDING,
        attempts=3, last_attempt_at=AT - millisecond,
        next_attempt_at=AT + timedelta(minutes=5) - millisecond,
    )  # fmt: skip


def test_a_delivery_never_attempted_has_no_times_and_no_expiry():
    delivery = Delivery("whsub-1", "evt-9", "unit.released", "{}", DeliveryState.DELIVERED)
    item = delivery_item(delivery, 30)
    assert (item["lastAttemptAt"], item["nextAttemptAt"], item["expiresAtEpoch"]) == (
        None, None, None,
    )  # fmt: skip
    assert item["state"] == "delivered"
    assert item["attempts"] == 0
    assert delivery_from_item("whsub-1", item) == delivery
    lacking = {k: v for k, v in item.items() if v is not None}
    assert delivery_from_item("whsub-1", {**lacking, "attempts": "0"}) == delivery


def test_an_answered_attempt_is_written_under_its_sort_key_and_read_back():
    attempt = DeliveryAttempt(
        "whsub-1", "evt-9", "workload.terminated", 4, AT, AttemptResult(503, "HTTP 503"),
        DeliveryState.PENDING, next_attempt_at=AT + timedelta(hours=1),
    )  # fmt: skip
    item = attempt_item(attempt, 7)
    assert item == {
        "PK": "WHDELIV#whsub-1",
        "SK": "ATT#2026-11-29T12:00:05.123Z#evt-9#04",
        "eventId": "evt-9",
        "type": "workload.terminated",
        "attempt": 4,
        "at": "2026-11-29T12:00:05.123Z",
        "status": 503,
        "error": "HTTP 503",
        "state": "pending",
        "nextAttemptAt": "2026-11-29T13:00:05.123Z",
        "expiresAtEpoch": int(AT.timestamp()) + 7 * DAY,
    }
    millisecond = timedelta(microseconds=456)
    read = attempt_from_item("whsub-1", {**item, "status": "503", "attempt": "4"})
    assert read == DeliveryAttempt(
        "whsub-1", "evt-9", "workload.terminated", 4, AT - millisecond,
        AttemptResult(503, "HTTP 503"), DeliveryState.PENDING,
        next_attempt_at=AT + timedelta(hours=1) - millisecond,
    )  # fmt: skip


def test_an_attempt_nothing_answered_and_the_last_one_read_back_without_status_or_next():
    attempt = DeliveryAttempt(
        "whsub-1", "evt-9", "unit.released", 12, AT, AttemptResult(error="timed out"),
        DeliveryState.FAILED,
    )  # fmt: skip
    item = attempt_item(attempt, 7)
    assert item["SK"] == "ATT#2026-11-29T12:00:05.123Z#evt-9#12"
    assert (item["status"], item["nextAttemptAt"], item["state"]) == (None, None, "failed")
    lacking = {k: v for k, v in item.items() if v is not None}
    read = attempt_from_item("whsub-1", lacking)
    assert read.result == AttemptResult(None, "timed out")
    assert read.next_attempt_at is None
    assert read.state is DeliveryState.FAILED
    answered = {**lacking, "status": 204, "state": "delivered"}
    delivered = attempt_from_item("whsub-1", {k: v for k, v in answered.items() if k != "error"})
    assert delivered.result == AttemptResult(204, None)
