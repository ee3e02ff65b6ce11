"""The webhook sender's writes as DynamoDB and SQS take them: the attempt's transaction
conditioned on the delivery as read, each health change conditioned on what it assumes,
and the hold of a message clamped to what SQS allows."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from reservations.kernel.aws import clients
from reservations.kernel.aws.codec import from_attributes, to_attributes
from reservations.kernel.writes import WriteConflict
from reservations.webhooks.models.domain import (
    AttemptResult,
    Delivery,
    DeliveryAttempt,
    DeliveryState,
    SigningSecrets,
    Subscription,
    SubscriptionStatus,
)
from reservations.webhooks.rules.attempts import Health
from reservations.webhooks.table.deliveries import DeliveryQueue, DeliveryTable
from reservations.webhooks.table.items import delivery_key, subscription_key

pytestmark = [pytest.mark.moto, pytest.mark.disable_socket]

AT = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
SUBSCRIPTION = Subscription(
    id="whsub-1", org_id="org-acme", url="https://hooks.example.com/in",
    secrets=SigningSecrets("whsec_" + "A" * 44), created_at=AT - timedelta(days=30),
)  # fmt: skip
FIRST = Delivery(
    "whsub-1", "evt-9", "workload.terminated", "{}", DeliveryState.PENDING, attempts=1,
    last_attempt_at=AT, next_attempt_at=AT + timedelta(seconds=5),
)  # fmt: skip


def attempt(number: int) -> DeliveryAttempt:
    return DeliveryAttempt(
        "whsub-1", "evt-9", "workload.terminated", number, AT + timedelta(minutes=number),
        AttemptResult(503), DeliveryState.PENDING,
    )  # fmt: skip


def stored(aws: Any, key: dict[str, str]) -> dict[str, Any] | None:
    item = aws.get_item(TableName="ReservationsTable", Key=to_attributes(key)).get("Item")
    return None if item is None else from_attributes(item)


def test_an_attempt_is_recorded_only_over_the_delivery_as_it_was_read(aws):
    table = DeliveryTable()
    table.record_attempt(None, FIRST, attempt(1))
    with pytest.raises(WriteConflict):
        table.record_attempt(None, FIRST, attempt(1))  # another copy recorded the first
    second = replace(FIRST, attempts=2)
    with pytest.raises(WriteConflict):
        table.record_attempt(second, replace(FIRST, attempts=3), attempt(3))  # stale read
    table.record_attempt(FIRST, second, attempt(2))
    assert stored(aws, delivery_key("whsub-1", "evt-9"))["attempts"] == 2
    listed = aws.query(
        TableName="ReservationsTable",
        KeyConditionExpression="PK = :pk AND begins_with(SK, :att)",
        ExpressionAttributeValues=to_attributes({":pk": "WHDELIV#whsub-1", ":att": "ATT#"}),
    )["Items"]
    assert sorted(int(from_attributes(item)["attempt"]) for item in listed) == [1, 2]


def test_each_health_change_holds_only_while_what_it_assumes_does(aws):
    table = DeliveryTable()
    key = subscription_key("org-acme", "whsub-1")
    assert table.update_health(SUBSCRIPTION, Health.UNCHANGED, AT) is True
    assert stored(aws, key) is None  # nothing written for no change
    for health in (Health.RECOVERED, Health.FAILING):
        assert table.update_health(SUBSCRIPTION, health, AT) is False  # no subscription
    assert stored(aws, key) is None
    table.put_subscription(SUBSCRIPTION)
    assert table.update_health(SUBSCRIPTION, Health.FAILING, AT) is True
    later = AT + timedelta(days=1)
    assert table.update_health(SUBSCRIPTION, Health.FAILING, later) is True
    assert stored(aws, key)["failingSince"] == "2026-11-29T12:00:00.000Z"  # the first kept
    seen = replace(SUBSCRIPTION, failing_since=AT)
    assert table.update_health(SUBSCRIPTION, Health.DISABLED, later) is False  # not seen failing
    assert table.update_health(replace(seen, failing_since=later), Health.DISABLED, later) is False
    assert stored(aws, key)["status"] == "active"
    assert table.update_health(SUBSCRIPTION, Health.RECOVERED, later) is True
    assert "failingSince" not in stored(aws, key)
    assert table.update_health(SUBSCRIPTION, Health.FAILING, AT) is True
    disabled_at = AT + timedelta(days=5)
    assert table.update_health(seen, Health.DISABLED, disabled_at) is True
    item = stored(aws, key)
    assert (item["status"], item["disabledAt"]) == ("disabled", "2026-12-04T12:00:00.000Z")
    assert table.update_health(seen, Health.FAILING, later) is False  # disabled: not failing
    assert table.update_health(seen, Health.DISABLED, disabled_at) is False  # once only
    gone = replace(SUBSCRIPTION, status=SubscriptionStatus.DISABLED)
    assert table.load_subscription("org-acme", "whsub-1") == replace(
        gone, failing_since=AT, disabled_at=disabled_at
    )


class RecordingSqs:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def change_message_visibility(self, **request: Any) -> None:
        self.calls.append(request)


@pytest.mark.parametrize(
    ("wait", "seconds"),
    [
        (timedelta(seconds=4, milliseconds=100), 5),
        (timedelta(seconds=-3), 0),
        (timedelta(hours=12), 43_200),
        (timedelta(hours=13), 43_200),
    ],
)
def test_a_message_is_held_until_its_next_attempt_rounded_up_within_sqs_bounds(
    monkeypatch, wait, seconds
):
    sqs = RecordingSqs()
    monkeypatch.setattr(clients, "sqs", lambda: sqs)
    monkeypatch.setenv("WEBHOOK_DELIVERY_QUEUE_URL", "https://sqs.test/deliveries")
    DeliveryQueue().hold("receipt-1", AT + wait, AT)
    assert sqs.calls == [
        {
            "QueueUrl": "https://sqs.test/deliveries",
            "ReceiptHandle": "receipt-1",
            "VisibilityTimeout": seconds,
        }
    ]


def test_a_pending_delivery_is_abandoned_as_failed_unless_it_changed_since_read(aws):
    table = DeliveryTable()
    assert table.load_delivery("whsub-1", "evt-9") is None
    table.record_attempt(None, FIRST, attempt(1))
    table.abandon(replace(FIRST, attempts=2), "the subscription is disabled")  # stale read
    assert table.load_delivery("whsub-1", "evt-9") == FIRST
    table.abandon(FIRST, "the subscription is disabled")
    assert table.load_delivery("whsub-1", "evt-9") == replace(
        FIRST, state=DeliveryState.FAILED, next_attempt_at=None
    )
    item = stored(aws, delivery_key("whsub-1", "evt-9"))
    assert (item["abandoned"], "nextAttemptAt" in item) == ("the subscription is disabled", False)
    delivered = replace(FIRST, attempts=2, state=DeliveryState.DELIVERED, next_attempt_at=None)
    table.record_attempt(replace(FIRST, state=DeliveryState.FAILED), delivered, attempt(2))
    table.abandon(delivered, "again")  # not pending: left as it is
    assert table.load_delivery("whsub-1", "evt-9") == delivered
    assert "abandoned" not in stored(aws, delivery_key("whsub-1", "evt-9"))


def test_a_retry_by_hand_is_put_on_the_delivery_queue_as_its_message(aws, monkeypatch):
    import boto3

    from reservations.kernel.settings import settings
    from reservations.webhooks.models.domain import DeliveryRequest

    sqs = boto3.client("sqs")
    url = sqs.get_queue_url(QueueName="WebhookDeliveryQueue")["QueueUrl"]
    monkeypatch.setenv("WEBHOOK_DELIVERY_QUEUE_URL", url)
    settings.cache_clear()
    request = DeliveryRequest(
        subscriptionId="whsub-1", orgId="org-acme", eventId="evt-9",
        eventType="workload.terminated", body="{}", retryOf=8,
    )  # fmt: skip
    DeliveryQueue().send(request)
    [message] = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert message["Body"] == request.to_json()
    settings.cache_clear()
