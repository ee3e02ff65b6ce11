"""``GET /v1/webhooks/{id}/deliveries``, ``GET /v1/webhooks/{id}/deliveries/{eventId}`` and
``POST /v1/webhooks/{id}/deliveries/{eventId}/retry``: a subscription's recent attempts, newest
first; one delivery with every attempt of it; and a failed delivery sent again now.

All look at the caller's org's subscription first: another org's, like an unknown one, is
the one 404. A listing page is one Query backwards over the subscription's attempts from the
cursor on. One delivery is one Query of its item and its attempts' copies. A retry queues
one message naming the attempts the delivery failed after; the sender makes one more attempt
while it still stands so (``webhooks.rules.attempts``), so a retry asked twice, or its message
received twice, is one attempt: it needs no key record.
"""

from __future__ import annotations

from datetime import datetime

from aws_lambda_powertools.metrics import MetricUnit

from reservations.events import EVENTS_READ
from reservations.kernel.caller import Caller
from reservations.kernel.cursors import (
    Cursor,
    CursorScope,
    decode_cursor,
    encode_cursor,
    page_limit,
)
from reservations.kernel.errors import NotFound
from reservations.kernel.idempotency.models import Outcome
from reservations.kernel.idempotency.rules import check_header
from reservations.kernel.ids import is_resource_id
from reservations.kernel.observability import logger, metrics
from reservations.kernel.wire import response_json
from reservations.webhooks.errors import DeliveryNotFailed, SubscriptionDisabled
from reservations.webhooks.models.api import RetryQueued
from reservations.webhooks.models.domain import (
    Delivery,
    DeliveryDetail,
    DeliveryPage,
    DeliveryRequest,
    DeliveryState,
    DeliveryView,
    Subscription,
    SubscriptionStatus,
)
from reservations.webhooks.ports import DeliveryQueuer, SubscriptionStore
from reservations.webhooks.rules.attempts import DISABLE_AFTER
from reservations.webhooks.table.items import attempt_sk

DELIVERIES_LIST = "webhook-deliveries"


def _own_subscription(
    caller: Caller, subscription_id: str, store: SubscriptionStore
) -> Subscription:
    """The caller's org's subscription; the one 404 otherwise (checked before anything)."""
    if not (is_resource_id(subscription_id) and caller.has(EVENTS_READ)):
        raise NotFound()
    subscription = store.load_subscription(caller.org_id, subscription_id)
    if subscription is None:
        raise NotFound()
    return subscription


def list_deliveries(
    caller: Caller,
    subscription_id: str,
    limit: str | None,
    cursor: str | None,
    store: SubscriptionStore,
    key: bytes,
) -> DeliveryPage:
    """A page of the subscription's attempts, newest first."""
    _own_subscription(caller, subscription_id, store)
    size = page_limit(limit)
    scope = CursorScope(subscription_id, "", caller.org_id, DELIVERIES_LIST)
    before = decode_cursor(cursor, scope, key).after if cursor else None
    attempts = store.attempts_page(subscription_id, before, size + 1)
    page = attempts[:size]
    more = len(attempts) > size
    next_cursor = encode_cursor(Cursor(attempt_sk(page[-1])), scope, key) if more else None
    return DeliveryPage(items=[DeliveryView.of(a) for a in page], next_cursor=next_cursor)


def get_delivery(
    caller: Caller, subscription_id: str, event_id: str, store: SubscriptionStore
) -> DeliveryDetail:
    """One event's delivery to the caller's org's subscription and its attempts, newest
    first; the one 404 for anything not found or not well-formed."""
    _own_subscription(caller, subscription_id, store)
    if not is_resource_id(event_id):
        raise NotFound()
    found = store.load_delivery_attempts(subscription_id, event_id)
    if found is None:
        raise NotFound()
    return DeliveryDetail.of(*found)


def _retryable(subscription: Subscription, delivery: Delivery) -> None:
    """Nothing when a retry by hand can be attempted; else its 409, saying why."""
    if subscription.status is SubscriptionStatus.DISABLED:
        raise SubscriptionDisabled(
            f"webhook {subscription.id} is disabled after {DISABLE_AFTER.days} days of failed "
            "deliveries; nothing was queued. Re-enable it by deleting it and subscribing again"
        )
    if delivery.state is not DeliveryState.FAILED:
        raise DeliveryNotFailed(
            f"delivery of {delivery.event_id} is {delivery.state.value}, not failed: "
            + _NOT_FAILED[delivery.state]
        )


_NOT_FAILED = {
    DeliveryState.PENDING: "it is retried on its schedule",
    DeliveryState.DELIVERED: "there is nothing to send again",
}


def retry_delivery(
    caller: Caller,
    subscription_id: str,
    event_id: str,
    idempotency_key: str | None,
    store: SubscriptionStore,
    queue: DeliveryQueuer,
    now: datetime,
) -> Outcome:
    """202: one more attempt of the failed delivery is queued; 409
    ``subscription_disabled`` when its subscription is disabled (the sender would drop the
    attempt), ``delivery_not_failed`` for a delivery that is pending (it is retried on its
    schedule) or delivered. Neither ever succeeds by asking again, so neither is a
    ``conflict`` nor carries ``Retry-After``; nothing is queued."""
    subscription = _own_subscription(caller, subscription_id, store)
    if not is_resource_id(event_id):
        raise NotFound()
    if idempotency_key is not None:  # checked (400 when malformed); nothing to keep
        check_header(idempotency_key)
    delivery = store.load_delivery(subscription_id, event_id)
    if delivery is None:
        raise NotFound()
    _retryable(subscription, delivery)
    request = DeliveryRequest(
        subscription_id=subscription.id,
        org_id=subscription.org_id,
        event_id=event_id,
        event_type=delivery.event_type,
        body=delivery.body,
        retry_of=delivery.attempts,
    )
    queue(request)
    context = {"subscriptionId": subscription_id, "eventId": event_id, "callerOrgId": caller.org_id}
    logger.info("webhook retry queued", extra={**context, "attempt": delivery.attempts + 1})
    metrics.add_metric(name="WebhookRetriesByHand", unit=MetricUnit.Count, value=1)
    answer = RetryQueued(event_id=event_id, attempt=delivery.attempts + 1, queued_at=now)
    return Outcome(202, response_json(answer))
