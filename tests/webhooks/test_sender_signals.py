"""What the webhook sender tells the operator about each message it settles: the log line
(message, level, the delivery it names) and the metric (name, unit, value) of every outcome,
over the in-memory store, a recording queue and an endpoint the test answers for."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aws_lambda_powertools.metrics import MetricUnit

from reservations.kernel.writes import WriteConflict
from reservations.webhooks import sender as webhook_delivery
from reservations.webhooks.models.domain import (
    AttemptResult,
    Delivery,
    DeliveryAttempt,
    DeliveryRequest,
    DeliveryState,
    SigningSecrets,
    Subscription,
    SubscriptionStatus,
)
from reservations.webhooks.rules.attempts import Health
from reservations.webhooks.rules.signing import delivery_headers
from reservations.webhooks.sender import ReceivedMessage, SenderPorts, deliver_batch
from tests.support.webhook_fakes import FakeDeliveryStore

pytestmark = pytest.mark.disable_socket

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
CURRENT = "whsec_" + "Y3VycmVudA" * 4 + "Y3U="
PREVIOUS = "whsec_" + "cHJldmlvdXM" * 4 + "cA=="
BODY = '{"id":"evt-9","type":"workload.terminated"}'
REQUEST = DeliveryRequest(
    subscriptionId="whsub-1", orgId="org-acme", eventId="evt-9",
    eventType="workload.terminated", body=BODY,
)  # fmt: skip
CONTEXT = {
    "subscriptionId": "whsub-1",
    "orgId": "org-acme",
    "eventId": "evt-9",
    "eventType": "workload.terminated",
}
SUBSCRIPTION = Subscription(
    id="whsub-1", org_id="org-acme", url="https://hooks.example.com/in",
    secrets=SigningSecrets(CURRENT), created_at=NOW - timedelta(days=30),
)  # fmt: skip


@dataclass
class Endpoint:
    """Answers every attempt with ``answer`` (raises it when it is an exception)."""

    answer: AttemptResult | Exception
    posted: list[tuple[str, dict[str, str], str]] = field(default_factory=list)

    def post(self, url: str, headers: Mapping[str, str], body: str) -> AttemptResult:
        self.posted.append((url, dict(headers), body))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@dataclass
class Holder:
    held: list[tuple[str, datetime, datetime]] = field(default_factory=list)

    def hold(self, receipt_handle: str, until: datetime, now: datetime) -> None:
        self.held.append((receipt_handle, until, now))


class Store(FakeDeliveryStore):
    """The fake store, recording what the sender asks of it; ``conflict``: another copy
    recorded first; ``healthy``: what update_health answers (None: the fake's own)."""

    def __init__(self, conflict: bool = False, healthy: bool | None = None) -> None:
        super().__init__()
        self.conflict = conflict
        self.healthy = healthy
        self.abandoned: list[tuple[Delivery, str]] = []
        self.health: list[tuple[Subscription, Health, datetime]] = []

    def record_attempt(
        self, before: Delivery | None, after: Delivery, attempt: DeliveryAttempt
    ) -> None:
        if self.conflict:
            raise WriteConflict("ConditionalCheckFailed")
        super().record_attempt(before, after, attempt)

    def abandon(self, delivery: Delivery, reason: str) -> None:
        self.abandoned.append((delivery, reason))
        super().abandon(delivery, reason)

    def update_health(self, subscription: Subscription, health: Health, at: datetime) -> bool:
        self.health.append((subscription, health, at))
        answer = super().update_health(subscription, health, at)
        return answer if self.healthy is None else self.healthy


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any, float]]:
    metrics: list[tuple[str, Any, float]] = []

    def add_metric(name: str, unit: Any, value: float) -> None:
        metrics.append((name, unit, value))

    monkeypatch.setattr(webhook_delivery.metrics, "add_metric", add_metric)
    return metrics


def lines(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "reservations"]


def the_line(caplog: pytest.LogCaptureFixture, message: str) -> logging.LogRecord:
    [record] = [r for r in caplog.records if r.getMessage() == message]
    return record


def names(record: logging.LogRecord, *keys: str) -> dict[str, Any]:
    return {key: getattr(record, key, "<absent>") for key in keys}


def send(
    store: Store, answer: AttemptResult | Exception, jitter: float = 0.5
) -> tuple[list[str], Holder, Endpoint]:
    holder, endpoint = Holder(), Endpoint(answer)
    ports = SenderPorts(store, holder, endpoint, lambda: NOW, lambda: jitter)
    kept = deliver_batch([ReceivedMessage("m-1", "r-1", REQUEST)], ports)
    return kept, holder, endpoint


def with_subscription(subscription: Subscription = SUBSCRIPTION, **store: Any) -> Store:
    made = Store(**store)
    made.add(subscription)
    return made


def pending(attempts: int, **fields: Any) -> Delivery:
    return Delivery(
        "whsub-1", "evt-9", "workload.terminated", BODY, DeliveryState.PENDING,
        attempts=attempts, last_attempt_at=NOW - timedelta(hours=10),
        next_attempt_at=NOW - timedelta(seconds=1), **fields,
    )  # fmt: skip


def test_a_delivered_attempt_is_said_at_info_counted_and_clears_the_failing_since(counted, said):
    failing = replace(SUBSCRIPTION, failing_since=NOW - timedelta(days=1))
    store = with_subscription(failing)
    kept, holder, _ = send(store, AttemptResult(204))
    assert (kept, holder.held) == ([], [])
    assert counted == [("WebhooksDelivered", MetricUnit.Count, 1)]
    assert lines(said) == [(logging.INFO, "webhook delivered")]
    record = the_line(said, "webhook delivered")
    assert names(record, *CONTEXT) == CONTEXT
    assert names(record, "attempt", "state", "status", "error", "nextAttemptAt") == {
        "attempt": 1, "state": "delivered", "status": 204, "error": None, "nextAttemptAt": None,
    }  # fmt: skip
    assert store.health == [(failing, Health.RECOVERED, NOW)]
    assert store.subscription("whsub-1").failing_since is None


def test_a_failed_attempt_is_a_warning_naming_its_next_time_and_a_scheduled_retry(counted, said):
    store = with_subscription()
    kept, holder, _ = send(store, AttemptResult(503, "HTTP 503"), jitter=0.5)
    retry_at = NOW + timedelta(seconds=5)
    assert kept == ["m-1"]
    assert holder.held == [("r-1", retry_at, NOW)]
    assert counted == [("WebhookRetriesScheduled", MetricUnit.Count, 1)]
    assert lines(said) == [(logging.WARNING, "webhook attempt failed")]
    record = the_line(said, "webhook attempt failed")
    assert names(record, *CONTEXT) == CONTEXT
    assert names(record, "attempt", "state", "status", "error", "nextAttemptAt") == {
        "attempt": 1, "state": "pending", "status": 503, "error": "HTTP 503",
        "nextAttemptAt": retry_at.isoformat(),
    }  # fmt: skip
    assert store.health == [(SUBSCRIPTION, Health.FAILING, NOW)]
    assert store.subscription("whsub-1").failing_since == NOW


def test_a_refused_attempt_is_counted_as_refused_besides_its_retry(counted, said):
    store = with_subscription()
    send(store, AttemptResult(error="refused: a private address", refused=True))
    assert counted == [
        ("WebhookRetriesScheduled", MetricUnit.Count, 1),
        ("WebhookAttemptsRefused", MetricUnit.Count, 1),
    ]
    record = the_line(said, "webhook attempt failed")
    assert (record.status, record.error) == (None, "refused: a private address")


def test_the_last_attempt_failing_after_five_days_fails_the_delivery_and_disables(counted, said):
    failing = replace(SUBSCRIPTION, failing_since=NOW - timedelta(days=5))
    store = with_subscription(failing)
    store.deliveries[("whsub-1", "evt-9")] = pending(7)
    kept, holder, _ = send(store, AttemptResult(500, "HTTP 500"))
    assert (kept, holder.held) == ([], [])
    assert counted == [
        ("WebhooksFailed", MetricUnit.Count, 1),
        ("WebhookSubscriptionsDisabled", MetricUnit.Count, 1),
    ]
    assert lines(said) == [
        (logging.WARNING, "webhook attempt failed"),
        (logging.WARNING, "subscription disabled: every delivery failed for 5 days"),
    ]
    disabled = the_line(said, "subscription disabled: every delivery failed for 5 days")
    assert names(disabled, *CONTEXT) == CONTEXT
    failed = the_line(said, "webhook attempt failed")
    assert (failed.attempt, failed.state, failed.nextAttemptAt) == (8, "failed", None)
    assert store.health == [(failing, Health.DISABLED, NOW)]
    assert store.subscription("whsub-1").status is SubscriptionStatus.DISABLED


def test_a_disabling_another_write_overtook_is_neither_said_nor_counted(counted, said):
    failing = replace(SUBSCRIPTION, failing_since=NOW - timedelta(days=6))
    store = with_subscription(failing, healthy=False)
    send(store, AttemptResult(500, "HTTP 500"))
    assert [name for name, _, _ in counted] == ["WebhookRetriesScheduled"]
    assert lines(said) == [(logging.WARNING, "webhook attempt failed")]
    assert [health for _, health, _ in store.health] == [Health.DISABLED]


def test_an_attempt_another_copy_recorded_first_is_said_and_dropped(counted, said):
    store = with_subscription(conflict=True)
    kept, holder, endpoint = send(store, AttemptResult(503, "HTTP 503"))
    assert (kept, holder.held, counted, store.health) == ([], [], [], [])
    assert len(endpoint.posted) == 1
    assert lines(said) == [(logging.INFO, "attempt recorded by another copy of the message")]
    record = the_line(said, "attempt recorded by another copy of the message")
    assert names(record, *CONTEXT) == CONTEXT


def test_a_pending_delivery_of_a_disabled_subscription_is_abandoned_said_and_counted(counted, said):
    store = with_subscription(replace(SUBSCRIPTION, status=SubscriptionStatus.DISABLED))
    delivery = pending(3)
    store.deliveries[("whsub-1", "evt-9")] = delivery
    kept, holder, endpoint = send(store, AttemptResult(204))
    assert (kept, holder.held, endpoint.posted) == ([], [], [])
    assert store.abandoned == [(delivery, "the subscription is disabled")]
    assert store.load_delivery("whsub-1", "evt-9").state is DeliveryState.FAILED
    assert counted == [("WebhooksFailed", MetricUnit.Count, 1)]
    assert lines(said) == [(logging.WARNING, "pending delivery abandoned")]
    record = the_line(said, "pending delivery abandoned")
    assert names(record, *CONTEXT, "reason") == {
        **CONTEXT,
        "reason": "the subscription is disabled",
    }


@pytest.mark.parametrize(
    ("subscribed", "state", "reason"),
    [
        (False, None, "the subscription no longer exists"),
        (True, DeliveryState.DELIVERED, "already delivered"),
    ],
)
def test_a_message_with_nothing_to_deliver_is_said_at_info_and_abandons_nothing(
    counted, said, subscribed, state, reason
):
    store = with_subscription() if subscribed else Store()
    if state is not None:
        store.deliveries[("whsub-1", "evt-9")] = replace(pending(2), state=state)
    kept, holder, endpoint = send(store, AttemptResult(204))
    assert (kept, holder.held, endpoint.posted, counted) == ([], [], [], [])
    assert store.abandoned == []
    assert lines(said) == [(logging.INFO, "nothing to deliver")]
    assert names(the_line(said, "nothing to deliver"), *CONTEXT, "reason") == {
        **CONTEXT,
        "reason": reason,
    }


def test_an_attempt_is_posted_to_the_url_signed_with_every_secret_in_force(counted, said):
    rotating = SigningSecrets(CURRENT, PREVIOUS, NOW + timedelta(hours=1))
    store = with_subscription(replace(SUBSCRIPTION, secrets=rotating))
    _, _, endpoint = send(store, AttemptResult(204))
    expected = delivery_headers((CURRENT, PREVIOUS), "evt-9", NOW, BODY)
    assert endpoint.posted == [("https://hooks.example.com/in", expected, BODY)]


def test_a_sender_fault_in_an_attempt_is_logged_with_its_trace_and_recorded_failed(counted, said):
    store = with_subscription()
    kept, _, _ = send(store, RuntimeError("boom"))
    assert kept == ["m-1"]
    fault = the_line(said, "webhook attempt failed inside the sender")
    assert fault.levelno == logging.ERROR
    assert fault.exc_info is not None
    assert names(fault, *CONTEXT) == CONTEXT
    [attempt] = store.attempts_of("evt-9")
    assert attempt.result == AttemptResult(error="not sent: the sender failed")


def test_a_message_that_is_no_delivery_request_is_kept_and_said_as_an_error(counted, said):
    holder, endpoint = Holder(), Endpoint(AttemptResult(204))
    ports = SenderPorts(with_subscription(), holder, endpoint, lambda: NOW, lambda: 0.5)
    kept = deliver_batch([ReceivedMessage("m-0", "r-0", None)], ports)
    assert (kept, holder.held, endpoint.posted, counted) == (["m-0"], [], [], [])
    assert lines(said) == [
        (logging.ERROR, "not a delivery request: kept for the dead-letter queue")
    ]
    unreadable = the_line(said, "not a delivery request: kept for the dead-letter queue")
    assert names(unreadable, "messageId") == {"messageId": "m-0"}


class Broken(Store):
    def record_attempt(
        self, before: Delivery | None, after: Delivery, attempt: DeliveryAttempt
    ) -> None:
        raise RuntimeError("the table is down")


def test_a_message_whose_outcome_cannot_be_recorded_is_kept_said_and_counted(counted, said):
    store = Broken()
    store.add(SUBSCRIPTION)
    kept, holder, endpoint = send(store, AttemptResult(204))
    assert (kept, holder.held, len(endpoint.posted)) == (["m-1"], [], 1)
    assert counted == [("WebhookSettleErrors", MetricUnit.Count, 1)]
    assert lines(said) == [(logging.ERROR, "delivery not settled: the message will come back")]
    unsettled = the_line(said, "delivery not settled: the message will come back")
    assert unsettled.exc_info is not None
    assert names(unsettled, *CONTEXT) == CONTEXT


def test_a_message_before_its_next_attempt_is_kept_and_held_until_then(counted, said):
    store = with_subscription()
    later = NOW + timedelta(minutes=3)
    store.deliveries[("whsub-1", "evt-9")] = replace(pending(2), next_attempt_at=later)
    kept, holder, endpoint = send(store, AttemptResult(204))
    assert (kept, holder.held, endpoint.posted, counted) == (["m-1"], [("r-1", later, NOW)], [], [])


def test_every_attempt_of_a_batch_goes_out_at_once_on_a_webhook_thread(counted, said):
    # More than any default pool: each attempt waits until all of them are under way.
    messages = [
        ReceivedMessage(f"m-{i}", f"r-{i}", REQUEST.model_copy(update={"event_id": f"evt-{i}"}))
        for i in range(40)
    ]
    together = threading.Barrier(len(messages), timeout=2)
    threads: list[str] = []

    class AllAtOnce(Endpoint):
        def post(self, url: str, headers: Mapping[str, str], body: str) -> AttemptResult:
            threads.append(threading.current_thread().name)
            together.wait()
            return AttemptResult(204)

    ports = SenderPorts(with_subscription(), Holder(), AllAtOnce(AttemptResult(204)), lambda: NOW)
    assert deliver_batch(messages, ports) == []
    assert counted == [("WebhooksDelivered", MetricUnit.Count, 1)] * len(messages)
    assert all(name.startswith("webhook_") for name in threads), threads
