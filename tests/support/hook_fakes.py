"""An in-memory stand-in for the logic's hook store (an org's webhook subscriptions and their
counter), with DynamoDB's conditions as ``webhooks.table.subscriptions`` writes them; the Idempotency-Key's
records are the node fake's (one table)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from reservations.kernel.idempotency.models import AnswerRecord, StoredResponse
from reservations.kernel.writes import WriteConflict
from reservations.webhooks.models.api import (
    HookWrite,
    OrgHooks,
    SecretRotation,
    SubscriptionCreate,
    SubscriptionDelete,
)
from reservations.webhooks.models.domain import Delivery, DeliveryAttempt, Subscription
from tests.support.fakes import FakeTable


@dataclass
class FakeSubscriptionStore:
    answers: FakeTable
    subscriptions: dict[tuple[str, str], Subscription] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    deliveries: dict[tuple[str, str], Delivery] = field(default_factory=dict)
    attempts: list[DeliveryAttempt] = field(default_factory=list)
    writes: int = 0
    # Called before each commit is applied: a test moves the world under the write here.
    before_commit: Callable[[HookWrite], None] = lambda _write: None

    def load_hooks(self, org_id: str) -> OrgHooks:
        mine = tuple(s for (org, _id), s in sorted(self.subscriptions.items()) if org == org_id)
        return OrgHooks(org_id, mine, self.counts.get(org_id, 0))

    def load_subscription(self, org_id: str, subscription_id: str) -> Subscription | None:
        return self.subscriptions.get((org_id, subscription_id))

    def commit(self, write: HookWrite, answer: AnswerRecord | None = None) -> None:
        self.before_commit(write)
        self.writes += 1
        stored = self.answers._live_answer(answer)
        if stored is not None:
            raise WriteConflict("ConditionalCheckFailed", stored)
        subscription = write.subscription
        key = (subscription.org_id, subscription.id)
        if isinstance(write, SecretRotation):
            current = self.subscriptions.get(key)
            if current is None or current.secrets.current != write.before.current:
                raise WriteConflict("ConditionalCheckFailed")
            self.subscriptions[key] = replace(current, secrets=subscription.secrets)
        else:
            self._count(write)
        if answer is not None:
            self.answers.answers[answer.request.scope] = answer

    def _count(self, write: SubscriptionCreate | SubscriptionDelete) -> None:
        subscription = write.subscription
        key = (subscription.org_id, subscription.id)
        exists = key in self.subscriptions
        creating = isinstance(write, SubscriptionCreate)
        if self.counts.get(subscription.org_id, 0) != write.count or exists == creating:
            raise WriteConflict("ConditionalCheckFailed")
        self.counts[subscription.org_id] = write.count + (1 if creating else -1)
        if creating:
            self.subscriptions[key] = subscription
        else:
            del self.subscriptions[key]

    def keep_answer(self, answer: AnswerRecord) -> StoredResponse | None:
        return self.answers.keep_answer(answer)

    def stored_answer(self, scope: str) -> StoredResponse | None:
        return self.answers.stored_answer(scope)

    def load_delivery(self, subscription_id: str, event_id: str) -> Delivery | None:
        return self.deliveries.get((subscription_id, event_id))

    def load_delivery_attempts(
        self, subscription_id: str, event_id: str
    ) -> tuple[Delivery, list[DeliveryAttempt]] | None:
        delivery = self.deliveries.get((subscription_id, event_id))
        if delivery is None:
            return None
        mine = [a for a in self.attempts
                if (a.subscription_id, a.event_id) == (subscription_id, event_id)]  # fmt: skip
        return delivery, sorted(mine, key=lambda a: a.attempt, reverse=True)

    def attempts_page(
        self, subscription_id: str, before: str | None, count: int
    ) -> list[DeliveryAttempt]:
        from reservations.webhooks.table.items import attempt_sk

        mine = [a for a in self.attempts if a.subscription_id == subscription_id]
        mine.sort(key=attempt_sk, reverse=True)
        return [a for a in mine if before is None or attempt_sk(a) < before][:count]
