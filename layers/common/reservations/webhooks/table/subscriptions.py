"""An org's webhook subscriptions behind the logic's hook store: the org's partition read in
one Query (its subscriptions and their counter), and each write committed as one
TransactWriteItems conditioned on the counter or the subscription as read, with the
Idempotency-Key's record beside it."""

from __future__ import annotations

from typing import Any, assert_never

from reservations.kernel.aws import clients, transactions
from reservations.kernel.aws.actions import Action, table
from reservations.kernel.aws.codec import from_attributes, to_attributes
from reservations.kernel.aws.queries import query_items
from reservations.kernel.idempotency import table as idempotency
from reservations.kernel.idempotency.models import AnswerRecord, StoredResponse
from reservations.webhooks.models.api import (
    HookWrite,
    OrgHooks,
    SecretRotation,
    SubscriptionCreate,
    SubscriptionDelete,
)
from reservations.webhooks.models.domain import Delivery, DeliveryAttempt
from reservations.webhooks.table.deliveries import WebhookReads
from reservations.webhooks.table.items import (
    ATTEMPT_SK_PREFIX,
    COUNTER_SK,
    SUBSCRIPTION_SK_PREFIX,
    attempt_from_item,
    counter_key,
    delivery_from_item,
    delivery_pk,
    delivery_range,
    is_attempt_copy,
    stamp,
    subscription_from_item,
    subscription_item,
    subscription_key,
    subscription_pk,
)


def hook_actions(write: HookWrite) -> list[Action]:
    """The write's actions: the subscription's change and, for a subscribe or a delete, the
    counter moved from the count read (the condition that keeps an org at 10)."""
    match write:
        case SubscriptionCreate():
            item = subscription_item(write.subscription)
            new = {"Put": {"TableName": table(), "Item": to_attributes(item),
                           "ConditionExpression": "attribute_not_exists(PK)"}}  # fmt: skip
            return [new, _counter(write.subscription.org_id, write.count, write.count + 1)]
        case SubscriptionDelete():
            key = subscription_key(write.subscription.org_id, write.subscription.id)
            gone = {"Delete": {"TableName": table(), "Key": to_attributes(key),
                               "ConditionExpression": "attribute_exists(PK)"}}  # fmt: skip
            return [gone, _counter(write.subscription.org_id, write.count, write.count - 1)]
        case SecretRotation():
            return [_rotation(write)]
        case _:
            assert_never(write)


def _counter(org_id: str, before: int, after: int) -> Action:
    """The org's counter at ``after``, on condition it is still ``before`` (absent is 0)."""
    condition = "#n = :before" + (" OR attribute_not_exists(PK)" if before == 0 else "")
    return {
        "Put": {
            "TableName": table(),
            "Item": to_attributes({**counter_key(org_id), "count": after}),
            "ConditionExpression": condition,
            "ExpressionAttributeNames": {"#n": "count"},
            "ExpressionAttributeValues": to_attributes({":before": before}),
        }
    }


def _rotation(write: SecretRotation) -> Action:
    """The secrets only (the sender updates the subscription's health meanwhile), on
    condition the current secret is the one read."""
    secrets = write.subscription.secrets
    expires = secrets.previous_expires_at
    values = {
        ":new": secrets.current,
        ":previous": secrets.previous,
        ":expires": None if expires is None else stamp(expires),
        ":read": write.before.current,
    }
    key = subscription_key(write.subscription.org_id, write.subscription.id)
    return {
        "Update": {
            "TableName": table(),
            "Key": to_attributes(key),
            "UpdateExpression": "SET secret = :new, previousSecret = :previous, "
            "previousSecretExpiresAt = :expires",
            "ConditionExpression": "secret = :read",
            "ExpressionAttributeValues": to_attributes(values),
        }
    }


class SubscriptionTable(WebhookReads):
    """Org webhook partitions; clients are made on first use, not here."""

    def load_hooks(self, org_id: str) -> OrgHooks:
        """The org's subscriptions (at most 10) and its counter, strongly consistent."""
        query: dict[str, Any] = {
            "TableName": table(),
            "KeyConditionExpression": "PK = :pk",
            "ExpressionAttributeValues": to_attributes({":pk": subscription_pk(org_id)}),
            "ConsistentRead": True,
        }
        items = list(query_items(query))
        counter = next((i for i in items if i["SK"] == COUNTER_SK), None)
        listed = [i for i in items if i["SK"].startswith(SUBSCRIPTION_SK_PREFIX)]
        return OrgHooks(
            org_id,
            tuple(subscription_from_item(i) for i in listed),
            0 if counter is None else int(counter["count"]),
        )

    def commit(self, write: HookWrite, answer: AnswerRecord | None = None) -> None:
        """All or nothing, with the key's record; WriteConflict when the counter or the
        subscription is not as read (or the key's live record stood in the way)."""
        transactions.run_answered(hook_actions(write), write.write_id, answer)

    def keep_answer(self, answer: AnswerRecord) -> StoredResponse | None:
        return idempotency.keep_answer(answer)

    def stored_answer(self, scope: str) -> StoredResponse | None:
        return idempotency.stored_answer(scope)

    def attempts_page(
        self, subscription_id: str, before: str | None, count: int
    ) -> list[DeliveryAttempt]:
        """One Query backwards over the subscription's attempts (their sort keys are their
        times), from before ``before`` (an attempt's sort key) or the newest."""
        upper = before if before is not None else ATTEMPT_SK_PREFIX + "~"
        values = {":pk": delivery_pk(subscription_id), ":first": ATTEMPT_SK_PREFIX, ":upper": upper}
        answer = clients.dynamodb().query(
            TableName=table(),
            KeyConditionExpression="PK = :pk AND SK BETWEEN :first AND :upper",
            ExpressionAttributeValues=to_attributes(values),
            ScanIndexForward=False,
            Limit=count + 1,
        )
        items = [from_attributes(i) for i in answer["Items"]]
        return [attempt_from_item(subscription_id, i) for i in items if i["SK"] != before][:count]

    def load_delivery_attempts(
        self, subscription_id: str, event_id: str
    ) -> tuple[Delivery, list[DeliveryAttempt]] | None:
        """One delivery and every attempt of it, newest first: one strongly consistent
        Query of the delivery's item and its attempts' copies (more only past 1 MB)."""
        pk, first, last = delivery_range(subscription_id, event_id)
        query: dict[str, Any] = {
            "TableName": table(),
            "KeyConditionExpression": "PK = :pk AND SK BETWEEN :first AND :last",
            "ExpressionAttributeValues": to_attributes({":pk": pk, ":first": first, ":last": last}),
            "ConsistentRead": True,
        }
        items = list(query_items(query))
        found = [i for i in items if i["SK"] == first]
        if not found:
            return None
        copies = [attempt_from_item(subscription_id, i) for i in items if is_attempt_copy(i)]
        copies.sort(key=lambda a: a.attempt, reverse=True)
        return delivery_from_item(subscription_id, found[0]), copies
