"""Delivering a batch of webhook messages: each one attempted, recorded, and either done or
held back on the queue until its next attempt.

Nothing is lost: a message leaves the queue only after its outcome is recorded (the
function's caller deletes only the messages this does not return), so a crash anywhere
brings it back, and the delivery's record says where it stands (an attempt sent but not
recorded is sent again: receivers deduplicate by ``webhook-id``). Two copies of one message
both read the record; the one that records second conflicts and is dropped.

No endpoint delays another: one message is one delivery, each attempt has its own deadline
(``webhooks.rules.attempts.ATTEMPT_TIMEOUT``), and a batch's attempts go out at the same
time, one thread each, so a batch takes as long as its slowest attempt, never their sum.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from aws_lambda_powertools.metrics import MetricUnit

from reservations.kernel.observability import logger, metrics
from reservations.kernel.writes import WriteConflict
from reservations.webhooks.models.domain import (
    AttemptResult,
    Delivery,
    DeliveryAttempt,
    DeliveryRequest,
    DeliveryState,
    Subscription,
)
from reservations.webhooks.rules.attempts import (
    Health,
    Plan,
    Send,
    Skip,
    Wait,
    after_attempt,
    health_after,
    plan,
)
from reservations.webhooks.rules.signing import delivery_headers

Clock = Callable[[], datetime]


class DeliveryStore(Protocol):
    """Subscriptions and deliveries, read strongly consistent."""

    def load_subscription(self, org_id: str, subscription_id: str) -> Subscription | None: ...

    def load_delivery(self, subscription_id: str, event_id: str) -> Delivery | None: ...

    def record_attempt(
        self, before: Delivery | None, after: Delivery, attempt: DeliveryAttempt
    ) -> None:
        """Both or neither; WriteConflict when the delivery is no longer ``before``."""

    def abandon(self, delivery: Delivery, reason: str) -> None: ...

    def update_health(self, subscription: Subscription, health: Health, at: datetime) -> bool: ...


class MessageHolder(Protocol):
    def hold(self, receipt_handle: str, until: datetime, now: datetime) -> None:
        """The received message comes back at ``until``, not before."""


class EndpointClient(Protocol):
    def post(self, url: str, headers: Mapping[str, str], body: str) -> AttemptResult:
        """One attempt; never raises for anything the endpoint does."""


@dataclass(frozen=True, slots=True)
class SenderPorts:
    store: DeliveryStore
    queue: MessageHolder
    client: EndpointClient
    now: Clock
    jitter: Callable[[], float] = random.random


@dataclass(frozen=True, slots=True)
class ReceivedMessage:
    """A message as received; ``request`` None when its body is no delivery request."""

    message_id: str
    receipt_handle: str
    request: DeliveryRequest | None


@dataclass(frozen=True, slots=True)
class _Planned:
    message: ReceivedMessage
    request: DeliveryRequest
    subscription: Subscription | None
    delivery: Delivery | None
    plan: Plan
    at: datetime


def deliver_batch(messages: Sequence[ReceivedMessage], ports: SenderPorts) -> list[str]:
    """Deliver what is due; the ids of the messages to keep on the queue (held until their
    next attempt, or not readable), every other one is done with."""
    kept = [m.message_id for m in messages if m.request is None]
    for message in messages:
        if message.request is None:
            logger.error("not a delivery request: kept for the dead-letter queue",
                         extra={"messageId": message.message_id})  # fmt: skip
    planned = [_plan(m, m.request, ports) for m in messages if m.request is not None]
    results = _attempt_all([p for p in planned if isinstance(p.plan, Send)], ports)
    for item in planned:
        try:
            keep = _settle(item, results.get(item.message.message_id), ports)
        except Exception:  # this message only: it comes back and is decided again
            logger.exception("delivery not settled: the message will come back",
                             extra=_context(item.request))  # fmt: skip
            metrics.add_metric(name="WebhookSettleErrors", unit=MetricUnit.Count, value=1)
            keep = True
        if keep:
            kept.append(item.message.message_id)
    return kept


def _plan(message: ReceivedMessage, request: DeliveryRequest, ports: SenderPorts) -> _Planned:
    subscription = ports.store.load_subscription(request.org_id, request.subscription_id)
    delivery = ports.store.load_delivery(request.subscription_id, request.event_id)
    now = ports.now()
    decided = plan(subscription, delivery, request, now)
    return _Planned(message, request, subscription, delivery, decided, now)


def _attempt_all(sends: Sequence[_Planned], ports: SenderPorts) -> dict[str, AttemptResult]:
    """Every due attempt at once, each within its own deadline (the client's)."""
    if not sends:
        return {}
    with ThreadPoolExecutor(max_workers=len(sends), thread_name_prefix="webhook") as pool:
        futures = {item.message.message_id: pool.submit(_attempt, item, ports) for item in sends}
        return {message_id: future.result() for message_id, future in futures.items()}


def _attempt(item: _Planned, ports: SenderPorts) -> AttemptResult:
    subscription = item.subscription
    assert subscription is not None  # a Send is planned only for a subscription
    request = item.request
    secrets = subscription.secrets.in_force(item.at)
    headers = delivery_headers(secrets, request.event_id, item.at, request.body)
    try:
        return ports.client.post(subscription.url, headers, request.body)
    except Exception:  # a bug, not the endpoint: the attempt counts as failed, and is told
        logger.exception("webhook attempt failed inside the sender", extra=_context(request))
        return AttemptResult(error="not sent: the sender failed")


def _settle(item: _Planned, result: AttemptResult | None, ports: SenderPorts) -> bool:
    """Record what happened; whether the message stays (held until its next attempt)."""
    decided = item.plan
    if isinstance(decided, Wait):
        ports.queue.hold(item.message.receipt_handle, decided.until, ports.now())
        return True
    if isinstance(decided, Skip):
        _skip(item, decided, ports)
        return False
    assert result is not None  # every Send was attempted
    after = _record(item, decided.attempt, result, ports)
    if after is None or after.next_attempt_at is None:
        return False
    ports.queue.hold(item.message.receipt_handle, after.next_attempt_at, ports.now())
    return True


def _skip(item: _Planned, skip: Skip, ports: SenderPorts) -> None:
    context = {**_context(item.request), "reason": skip.reason}
    if skip.abandon and item.delivery is not None:
        ports.store.abandon(item.delivery, skip.reason)
        logger.warning("pending delivery abandoned", extra=context)
        metrics.add_metric(name="WebhooksFailed", unit=MetricUnit.Count, value=1)
        return
    logger.info("nothing to deliver", extra=context)


def _record(
    item: _Planned, attempt: int, result: AttemptResult, ports: SenderPorts
) -> Delivery | None:
    """The attempt's record and the subscription's health; the delivery as it now stands,
    or None when another copy of the message recorded this attempt first."""
    after, record = after_attempt(
        item.delivery, item.request, attempt, result, item.at, ports.jitter()
    )
    try:
        ports.store.record_attempt(item.delivery, after, record)
    except WriteConflict:
        logger.info("attempt recorded by another copy of the message", extra=_context(item.request))
        return None
    _count(record, item.request)
    subscription = item.subscription
    assert subscription is not None
    health = health_after(subscription, result.delivered, item.at)
    if ports.store.update_health(subscription, health, item.at) and health is Health.DISABLED:
        logger.warning("subscription disabled: every delivery failed for 5 days",
                       extra=_context(item.request))  # fmt: skip
        metrics.add_metric(name="WebhookSubscriptionsDisabled", unit=MetricUnit.Count, value=1)
    return after


_METRIC_OF_STATE = {
    DeliveryState.DELIVERED: "WebhooksDelivered",
    DeliveryState.PENDING: "WebhookRetriesScheduled",
    DeliveryState.FAILED: "WebhooksFailed",
}


def _count(record: DeliveryAttempt, request: DeliveryRequest) -> None:
    metrics.add_metric(name=_METRIC_OF_STATE[record.state], unit=MetricUnit.Count, value=1)
    if record.result.refused:
        metrics.add_metric(name="WebhookAttemptsRefused", unit=MetricUnit.Count, value=1)
    extra = {
        **_context(request),
        "attempt": record.attempt,
        "state": record.state.value,
        "status": record.result.status,
        "error": record.result.error,
        "nextAttemptAt": record.next_attempt_at.isoformat() if record.next_attempt_at else None,
    }
    if record.state is DeliveryState.DELIVERED:
        logger.info("webhook delivered", extra=extra)
    else:
        logger.warning("webhook attempt failed", extra=extra)


def _context(request: DeliveryRequest) -> dict[str, str]:
    """What identifies a delivery in a log line (never its secret nor its body)."""
    return {
        "subscriptionId": request.subscription_id,
        "orgId": request.org_id,
        "eventId": request.event_id,
        "eventType": request.event_type,
    }
