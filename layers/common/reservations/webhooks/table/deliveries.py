"""The webhook sender's data: subscriptions and deliveries in the table, and the delivery
queue's visibility, which holds a message back until its delivery's next attempt."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from reservations.kernel.aws import clients, transactions
from reservations.kernel.aws.codec import to_attributes
from reservations.kernel.aws.queries import get_item
from reservations.kernel.settings import settings
from reservations.webhooks.models.domain import (
    Delivery,
    DeliveryAttempt,
    DeliveryRequest,
    DeliveryState,
    Subscription,
    SubscriptionStatus,
)
from reservations.webhooks.rules.attempts import Health
from reservations.webhooks.settings import webhook_delivery_queue_url
from reservations.webhooks.table.items import (
    attempt_copy_item,
    attempt_item,
    delivery_from_item,
    delivery_item,
    delivery_key,
    stamp,
    subscription_from_item,
    subscription_item,
    subscription_key,
)

# SQS keeps a received message invisible for at most 12 hours; the longest wait of the
# schedule (10 h, +10 %) fits, and a longer one would only bring the message back early.
MAX_VISIBILITY_SECONDS = 12 * 60 * 60

_HEALTH_UPDATES: dict[Health, tuple[str, str]] = {
    Health.RECOVERED: ("REMOVE failingSince", "attribute_exists(PK)"),
    Health.FAILING: (
        "SET failingSince = if_not_exists(failingSince, :at)",
        "attribute_exists(PK) AND #status = :active",
    ),
    Health.DISABLED: (
        "SET #status = :disabled, disabledAt = :at",
        "failingSince = :seen AND #status = :active",
    ),
}


class WebhookReads:
    """A subscription and a delivery, each one strongly consistent GetItem: what both the
    subscription endpoints' store and the sender's read."""

    def load_subscription(self, org_id: str, subscription_id: str) -> Subscription | None:
        item = get_item(subscription_key(org_id, subscription_id))
        return None if item is None else subscription_from_item(item)

    def load_delivery(self, subscription_id: str, event_id: str) -> Delivery | None:
        item = get_item(delivery_key(subscription_id, event_id))
        return None if item is None else delivery_from_item(subscription_id, item)


class DeliveryTable(WebhookReads):
    """The sender's writes: deliveries, their attempts, and a subscription's health;
    clients are made on first use, not here."""

    def record_attempt(
        self, before: Delivery | None, after: Delivery, attempt: DeliveryAttempt
    ) -> None:
        """The delivery as the attempt left it and the attempt's record (in the listing's
        order, and again beside the delivery), in one transaction conditioned on the
        delivery being as read; WriteConflict when another copy of the message recorded
        first."""
        retention = settings().history_retention_days
        delivery = {**_conditioned_on(before), "Item": _attrs(delivery_item(after, retention))}
        record = {"TableName": _table(), "Item": _attrs(attempt_item(attempt, retention))}
        copy = {"TableName": _table(), "Item": _attrs(attempt_copy_item(attempt, retention))}
        transactions.run([{"Put": delivery}, {"Put": record}, {"Put": copy}])

    def abandon(self, delivery: Delivery, reason: str) -> None:
        """A pending delivery that will not be attempted again becomes ``failed``, unless it
        changed since it was read."""
        _update(
            delivery_key(delivery.subscription_id, delivery.event_id),
            "SET #state = :failed, abandoned = :reason REMOVE nextAttemptAt",
            "attempts = :attempts AND #state = :pending",
            {"#state": "state"},
            {
                ":failed": DeliveryState.FAILED.value,
                ":pending": DeliveryState.PENDING.value,
                ":attempts": delivery.attempts,
                ":reason": reason,
            },
        )

    def update_health(self, subscription: Subscription, health: Health, at: datetime) -> bool:
        """Apply ``health`` to the subscription; False when its condition no longer held
        (a delivery succeeded meanwhile, or the subscription is gone)."""
        if health is Health.UNCHANGED:
            return True
        update, condition = _HEALTH_UPDATES[health]
        values: dict[str, Any] = {":at": stamp(at), ":active": SubscriptionStatus.ACTIVE.value}
        if health is Health.DISABLED:
            values[":disabled"] = SubscriptionStatus.DISABLED.value
            since = subscription.failing_since
            values[":seen"] = "" if since is None else stamp(since)
        used = {name: value for name, value in values.items() if name in update + condition}
        names = {"#status": "status"} if "#status" in update + condition else {}
        return _update(
            subscription_key(subscription.org_id, subscription.id), update, condition, names, used
        )

    def put_subscription(self, subscription: Subscription) -> None:
        """Store a subscription as it is (the phase that adds the endpoints conditions it)."""
        clients.dynamodb().put_item(
            TableName=_table(), Item=_attrs(subscription_item(subscription))
        )


class DeliveryQueue:
    """The delivery queue: a received message is held back until its next attempt; a
    retry by hand is put on it."""

    def send(self, request: DeliveryRequest) -> None:
        """One delivery request on the queue (raises when SQS does not take it)."""
        clients.sqs().send_message(
            QueueUrl=webhook_delivery_queue_url(), MessageBody=request.to_json()
        )

    def hold(self, receipt_handle: str, until: datetime, now: datetime) -> None:
        """The message comes back at ``until`` (at most 12 hours on: then it is looked at
        and held again)."""
        seconds = min(max(math.ceil((until - now).total_seconds()), 0), MAX_VISIBILITY_SECONDS)
        clients.sqs().change_message_visibility(
            QueueUrl=webhook_delivery_queue_url(),
            ReceiptHandle=receipt_handle,
            VisibilityTimeout=seconds,
        )


def _table() -> str:
    return settings().table_name


def _attrs(item: dict[str, Any]) -> dict[str, Any]:
    return to_attributes(item)


def _conditioned_on(before: Delivery | None) -> dict[str, Any]:
    if before is None:
        return {"TableName": _table(), "ConditionExpression": "attribute_not_exists(PK)"}
    return {
        "TableName": _table(),
        "ConditionExpression": "attempts = :attempts",
        "ExpressionAttributeValues": _attrs({":attempts": before.attempts}),
    }


def _update(
    key: dict[str, Any],
    update: str,
    condition: str,
    names: dict[str, str],
    values: dict[str, Any],
) -> bool:
    """One conditional UpdateItem; False when the condition did not hold."""
    request: dict[str, Any] = {
        "TableName": _table(),
        "Key": _attrs(key),
        "UpdateExpression": update,
        "ConditionExpression": condition,
    }
    if values:
        request["ExpressionAttributeValues"] = _attrs(values)
    if names:
        request["ExpressionAttributeNames"] = names
    try:
        clients.dynamodb().update_item(**request)
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        return False
    return True
