"""In-memory stand-ins for the webhook sender's ports: the table (DynamoDB's conditional
semantics), and the delivery queue as SQS and Lambda's event source mapping treat it on a
clock the test moves (visibility, receives, deletion of what the function did not report,
redelivery after a failed invocation)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from reservations.kernel.writes import WriteConflict
from reservations.webhooks.models.domain import (
    Delivery,
    DeliveryAttempt,
    DeliveryRequest,
    DeliveryState,
    Subscription,
    SubscriptionStatus,
)
from reservations.webhooks.rules.attempts import Health
from reservations.webhooks.sender import ReceivedMessage, SenderPorts, deliver_batch


@dataclass
class Clock:
    """A clock that moves only when told."""

    now: datetime

    def __call__(self) -> datetime:
        return self.now


class Crash(BaseException):
    """The function's process dies here (no handler in the code can catch it)."""


@dataclass
class FakeDeliveryStore:
    subscriptions: dict[tuple[str, str], Subscription] = field(default_factory=dict)
    deliveries: dict[tuple[str, str], Delivery] = field(default_factory=dict)
    attempts: list[DeliveryAttempt] = field(default_factory=list)
    # Called before each record is written: a test makes it raise to crash the function.
    before_record: Callable[[DeliveryAttempt], None] = lambda _attempt: None

    def add(self, subscription: Subscription) -> None:
        self.subscriptions[(subscription.org_id, subscription.id)] = subscription

    def subscription(self, subscription_id: str) -> Subscription:
        return next(s for s in self.subscriptions.values() if s.id == subscription_id)

    def load_subscription(self, org_id: str, subscription_id: str) -> Subscription | None:
        return self.subscriptions.get((org_id, subscription_id))

    def load_delivery(self, subscription_id: str, event_id: str) -> Delivery | None:
        return self.deliveries.get((subscription_id, event_id))

    def record_attempt(
        self, before: Delivery | None, after: Delivery, attempt: DeliveryAttempt
    ) -> None:
        self.before_record(attempt)
        key = (after.subscription_id, after.event_id)
        stored = self.deliveries.get(key)
        if (stored is None) != (before is None) or (
            stored is not None and before is not None and stored.attempts != before.attempts
        ):
            raise WriteConflict("ConditionalCheckFailed")
        self.deliveries[key] = after
        self.attempts.append(attempt)

    def abandon(self, delivery: Delivery, reason: str) -> None:
        key = (delivery.subscription_id, delivery.event_id)
        stored = self.deliveries.get(key)
        unchanged = stored is not None and stored.attempts == delivery.attempts
        if unchanged and stored is not None and stored.state is DeliveryState.PENDING:
            self.deliveries[key] = replace(stored, state=DeliveryState.FAILED, next_attempt_at=None)

    def update_health(self, subscription: Subscription, health: Health, at: datetime) -> bool:
        key = (subscription.org_id, subscription.id)
        stored = self.subscriptions.get(key)
        if stored is None:
            return False
        if health is Health.RECOVERED:
            self.subscriptions[key] = replace(stored, failing_since=None)
        elif health is Health.FAILING and stored.status is SubscriptionStatus.ACTIVE:
            self.subscriptions[key] = replace(stored, failing_since=stored.failing_since or at)
        elif health is Health.DISABLED:
            if stored.failing_since != subscription.failing_since:
                return False
            self.subscriptions[key] = stored.disabled(at)
        return True

    def attempts_of(self, event_id: str) -> list[DeliveryAttempt]:
        return [a for a in self.attempts if a.event_id == event_id]


@dataclass
class _Message:
    id: str
    body: str
    visible_at: datetime
    receives: int = 0
    receipt: str = ""


@dataclass
class FakeDeliveryQueue:
    """SQS and the event source mapping: batches of visible messages go to the function;
    the ones it does not report back are deleted; a held one comes back at its time; after
    a failed invocation every message of the batch comes back after ``visibility``; one
    received ``max_receives`` times goes to the dead-letter queue instead (the template's
    ``maxReceiveCount``), so a sender that never lets a message go cannot loop for ever."""

    clock: Clock
    visibility: timedelta = timedelta(seconds=180)
    batch_size: int = 10
    max_receives: int = 20
    messages: dict[str, _Message] = field(default_factory=dict)
    dead: list[_Message] = field(default_factory=list)
    invocations: int = 0
    _ids: itertools.count[int] = field(default_factory=itertools.count)

    def send(self, request: DeliveryRequest) -> str:
        message_id = f"m-{next(self._ids)}"
        self.messages[message_id] = _Message(message_id, request.to_json(), self.clock.now)
        return message_id

    def hold(self, receipt_handle: str, until: datetime, now: datetime) -> None:
        message = next(m for m in self.messages.values() if m.receipt == receipt_handle)
        seconds = min(max(math.ceil((until - now).total_seconds()), 0), 12 * 3600)
        message.visible_at = now + timedelta(seconds=seconds)

    def visible(self) -> list[_Message]:
        now = self.clock.now
        return [m for m in self.messages.values() if m.visible_at <= now]

    def receive(self) -> list[ReceivedMessage]:
        for message in self.visible():
            if message.receives >= self.max_receives:
                self.dead.append(self.messages.pop(message.id))
        batch = self.visible()[: self.batch_size]
        received = []
        for message in batch:
            message.receives += 1
            message.receipt = f"{message.id}#r{message.receives}"
            message.visible_at = self.clock.now + self.visibility
            request = DeliveryRequest.model_validate_json(message.body)
            received.append(ReceivedMessage(message.id, message.receipt, request))
        return received

    def invoke(self, ports: SenderPorts) -> bool:
        """One invocation of the function with the next batch; False when it crashed."""
        batch = self.receive()
        if not batch:
            return True
        self.invocations += 1
        try:
            kept = set(deliver_batch(batch, ports))
        except Crash:
            return False  # nothing deleted: the whole batch comes back after `visibility`
        for message in batch:
            if message.message_id not in kept:
                del self.messages[message.message_id]
        return True

    def run(self, ports: SenderPorts, until: datetime, step: timedelta | None = None) -> None:
        """Invoke whenever a message is visible, moving the clock to the next visible
        message (or by ``step``) until ``until`` or an empty queue."""
        while self.messages and self.clock.now <= until:
            if self.visible():
                self.invoke(ports)
                continue
            following = min(m.visible_at for m in self.messages.values())
            self.clock.now = following if step is None else min(following, self.clock.now + step)
