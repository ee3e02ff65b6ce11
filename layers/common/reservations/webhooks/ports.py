"""What the webhooks slice needs from the world: an org's subscriptions and their deliveries
(``webhooks.table.subscriptions``), and the delivery queue a retry goes on."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from reservations.kernel.idempotency.models import AnswerRecord, StoredResponse
from reservations.kernel.ports import Ports
from reservations.webhooks.models.api import HookWrite, OrgHooks
from reservations.webhooks.models.domain import (
    Delivery,
    DeliveryAttempt,
    DeliveryRequest,
    Subscription,
    new_secret,
)


class SubscriptionStore(Protocol):
    """An org's webhook subscriptions (``ORGHOOK#<org>``): read strongly consistent, with
    the counter the writes are conditioned on, and written one transaction at a time with
    the Idempotency-Key's records beside it."""

    def load_hooks(self, org_id: str) -> OrgHooks:
        """Every subscription of the org (at most 10) and its counter."""

    def load_subscription(self, org_id: str, subscription_id: str) -> Subscription | None:
        """One of the org's subscriptions; None when the org has none of that id."""

    def commit(self, write: HookWrite, answer: AnswerRecord | None = None) -> None:
        """All or nothing; WriteConflict when the counter or the subscription changed."""

    def keep_answer(self, answer: AnswerRecord) -> StoredResponse | None: ...
    def stored_answer(self, scope: str) -> StoredResponse | None: ...

    def load_delivery(self, subscription_id: str, event_id: str) -> Delivery | None:
        """One event's delivery to the subscription, where it stands."""

    def load_delivery_attempts(
        self, subscription_id: str, event_id: str
    ) -> tuple[Delivery, list[DeliveryAttempt]] | None:
        """One event's delivery and every attempt made of it, newest first; None when the
        subscription has no delivery of that event."""

    def attempts_page(
        self, subscription_id: str, before: str | None, count: int
    ) -> list[DeliveryAttempt]:
        """Up to ``count`` attempts, newest first, from before the position ``before``."""


# Puts one delivery request on the webhook delivery queue; raises when it is not taken.
DeliveryQueuer = Callable[[DeliveryRequest], None]


@dataclass(frozen=True, kw_only=True)
class WebhookPorts(Ports):
    """An org's subscriptions, the delivery queue, and Standard Webhooks secrets."""

    webhooks: SubscriptionStore
    queue_delivery: DeliveryQueuer
    new_secret: Callable[[], str] = field(default=new_secret)
