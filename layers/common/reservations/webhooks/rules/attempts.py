"""When a webhook delivery is attempted, what an attempt's answer makes of it, and when a
subscription that keeps failing is disabled: pure rules, the clock and the jitter passed in.

=============================  ==============================================================
the delivery's record           what a message for it does now
=============================  ==============================================================
none yet                        attempt 1
pending, next attempt due       attempt ``attempts + 1``
pending, next attempt later     waits until then (the message comes back at that time)
failed, retried by hand         attempt ``attempts + 1`` (the message names ``attempts``)
delivered or failed             nothing (a copy of a message already dealt with)
subscription gone               nothing
subscription disabled           nothing; a pending delivery becomes ``failed``
type no longer subscribed       nothing
=============================  ==============================================================

An attempt answered 2xx (within ``ATTEMPT_TIMEOUT``) delivers. Any other outcome is retried
after about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h (each +-10 %, so that the deliveries of
one outage do not all come back in the same second); after the 8th attempt the delivery is
``failed``. A subscription whose attempts have all failed for ``DISABLE_AFTER`` (since the
first failure after its last delivered attempt) is disabled.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum

from reservations.webhooks.models import domain as webhooks

RETRY_DELAYS = (
    timedelta(seconds=5),
    timedelta(minutes=5),
    timedelta(minutes=30),
    timedelta(hours=2),
    timedelta(hours=5),
    timedelta(hours=10),
    timedelta(hours=10),
)
MAX_ATTEMPTS = len(RETRY_DELAYS) + 1
JITTER = 0.1
DISABLE_AFTER = timedelta(days=5)
# One attempt, all of it: resolving, connecting, sending and reading the answer.
ATTEMPT_TIMEOUT = timedelta(seconds=10)
# At most this much of an answer is read; the rest is never looked at.
RESPONSE_CAP_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Send:
    attempt: int


@dataclass(frozen=True, slots=True)
class Wait:
    until: datetime


@dataclass(frozen=True, slots=True)
class Skip:
    """Nothing to send. ``abandon``: the pending delivery becomes ``failed`` with ``reason``."""

    reason: str
    abandon: bool = False


Plan = Send | Wait | Skip


def plan(
    subscription: webhooks.Subscription | None,
    delivery: webhooks.Delivery | None,
    request: webhooks.DeliveryRequest,
    now: datetime,
) -> Plan:
    """What a message for ``request`` does now (the table in the module's docstring)."""
    if subscription is None:
        return Skip("the subscription no longer exists")
    pending = delivery is not None and delivery.state is webhooks.DeliveryState.PENDING
    if subscription.status is webhooks.SubscriptionStatus.DISABLED:
        return Skip("the subscription is disabled", abandon=pending)
    if not subscription.wants(request.event_type):
        return Skip(f"the subscription no longer takes {request.event_type}", abandon=pending)
    if delivery is None:
        return Send(attempt=1)
    if _retried_by_hand(delivery, request):
        return Send(attempt=delivery.attempts + 1)
    if not pending:
        return Skip(f"already {delivery.state.value}")
    if delivery.next_attempt_at is not None and now < delivery.next_attempt_at:
        return Wait(until=delivery.next_attempt_at)
    return Send(attempt=delivery.attempts + 1)


def _retried_by_hand(delivery: webhooks.Delivery, request: webhooks.DeliveryRequest) -> bool:
    """A retry asked by hand of this failed delivery, as it still stands."""
    failed = delivery.state is webhooks.DeliveryState.FAILED
    return failed and request.retry_of is not None and request.retry_of == delivery.attempts


def retry_delay(attempt: int, jitter: float) -> timedelta | None:
    """How long after failed attempt number ``attempt`` (from 1) the next one is made;
    None after the last of the schedule (an attempt by hand past it included). ``jitter``
    in [0, 1) spreads the delay over +-``JITTER`` of it."""
    if not 1 <= attempt < MAX_ATTEMPTS:
        return None
    return RETRY_DELAYS[attempt - 1] * (1 - JITTER + 2 * JITTER * jitter)


def after_attempt(
    delivery: webhooks.Delivery | None,
    request: webhooks.DeliveryRequest,
    attempt: int,
    result: webhooks.AttemptResult,
    at: datetime,
    jitter: float,
) -> tuple[webhooks.Delivery, webhooks.DeliveryAttempt]:
    """The delivery as attempt ``attempt`` leaves it, and the attempt's own record."""
    delay = None if result.delivered else retry_delay(attempt, jitter)
    if result.delivered:
        state = webhooks.DeliveryState.DELIVERED
    else:
        state = webhooks.DeliveryState.FAILED if delay is None else webhooks.DeliveryState.PENDING
    next_at = None if delay is None else at + delay
    before = delivery or webhooks.Delivery(
        subscription_id=request.subscription_id,
        event_id=request.event_id,
        event_type=request.event_type,
        body=request.body,
    )
    after = replace(
        before, state=state, attempts=attempt, last_attempt_at=at, next_attempt_at=next_at
    )
    record = webhooks.DeliveryAttempt(
        subscription_id=request.subscription_id,
        event_id=request.event_id,
        event_type=request.event_type,
        attempt=attempt,
        at=at,
        result=result,
        state=state,
        next_attempt_at=next_at,
    )
    return after, record


class Health(StrEnum):
    """What an attempt's outcome does to its subscription."""

    UNCHANGED = "unchanged"
    RECOVERED = "recovered"  # delivered after failures: failing since nothing
    FAILING = "failing"  # the first failure since the last delivery: failing since now
    DISABLED = "disabled"  # failing for DISABLE_AFTER and failed again


def health_after(subscription: webhooks.Subscription, delivered: bool, at: datetime) -> Health:
    """How an attempt at ``at`` that did or did not deliver changes ``subscription``."""
    if delivered:
        return Health.RECOVERED if subscription.failing_since is not None else Health.UNCHANGED
    if subscription.failing_since is None:
        return Health.FAILING
    if at - subscription.failing_since >= DISABLE_AFTER:
        return Health.DISABLED
    return Health.UNCHANGED
