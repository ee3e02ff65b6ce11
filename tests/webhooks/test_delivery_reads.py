"""A subscription's deliveries over the in-memory hook store: the attempts newest first a
page at a time, and a retry by hand of a failed delivery (its message, its 202, its line and
metric), each behind the caller's org's subscription."""

from __future__ import annotations

import json
import logging
from datetime import timedelta

import pytest
from aws_lambda_powertools.metrics import MetricUnit

from reservations.kernel.caller import Caller
from reservations.kernel.cursors import Cursor, CursorScope, encode_cursor
from reservations.kernel.errors import InvalidRequest, NotFound
from reservations.webhooks import deliveries as webhook_deliveries
from reservations.webhooks.deliveries import get_delivery, list_deliveries, retry_delivery
from reservations.webhooks.errors import DeliveryNotFailed, SubscriptionDisabled
from reservations.webhooks.models.domain import (
    AttemptResult,
    Delivery,
    DeliveryAttempt,
    DeliveryRequest,
    DeliveryState,
    SigningSecrets,
    Subscription,
)
from tests.support.fakes import FakeClock, FakeTable
from tests.support.hook_fakes import FakeSubscriptionStore
from tests.support.use_cases import NOW

pytestmark = pytest.mark.disable_socket

READS = frozenset({"events.read"})
CALLER = Caller("key-buyer", "org-buyer", READS, key_hash="hash-buyer")
OTHER = Caller("key-other", "org-other", READS, key_hash="hash-other")
NO_EVENTS = Caller("key-ro", "org-buyer", frozenset({"reservation.read"}), key_hash="hash-ro")
HOOK = "whsub-00000000000000000001"
KEY = b"k" * 32
BODY = '{"id":"evt-1"}'


def store() -> FakeSubscriptionStore:
    hooks = FakeSubscriptionStore(FakeTable(FakeClock(NOW)))
    for org, hook in (("org-buyer", HOOK), ("org-buyer", "whsub-2"), ("org-other", "whsub-3")):
        hooks.subscriptions[(org, hook)] = Subscription(
            hook, org, "https://hooks.example.com/", SigningSecrets("whsec_x"), NOW
        )
    for n in range(1, 6):
        hooks.attempts.append(attempt(HOOK, n))
    hooks.attempts.append(attempt("whsub-2", 9))
    return hooks


def attempt(hook: str, n: int) -> DeliveryAttempt:
    return DeliveryAttempt(
        hook, f"evt-{n}", "workload.terminated", 1, NOW + timedelta(minutes=n),
        AttemptResult(500, "HTTP 500"), DeliveryState.PENDING,
    )  # fmt: skip


def events(
    limit: str | None, cursor: str | None, hooks: FakeSubscriptionStore
) -> tuple[list[str], str | None]:
    page = list_deliveries(CALLER, HOOK, limit, cursor, hooks, KEY)
    return [item.event_id for item in page.items], page.next_cursor


def test_the_attempts_are_listed_newest_first_a_page_at_a_time_each_once():
    hooks = store()
    first, cursor = events("2", None, hooks)
    assert first == ["evt-5", "evt-4"]
    second, cursor = events("2", cursor, hooks)
    assert second == ["evt-3", "evt-2"]
    assert events("2", cursor, hooks) == (["evt-1"], None)
    assert events("5", None, hooks)[1] is None
    assert events(None, None, hooks) == (["evt-5", "evt-4", "evt-3", "evt-2", "evt-1"], None)
    assert events("", "", hooks)[0] == ["evt-5", "evt-4", "evt-3", "evt-2", "evt-1"]


def test_a_page_reads_one_attempt_more_than_it_shows_to_know_whether_more_follow():
    hooks = store()
    read = hooks.attempts_page
    asked: list[tuple[str | None, int]] = []

    def recording(subscription_id: str, before: str | None, limit: int):
        asked.append((before, limit))
        return read(subscription_id, before, limit)

    hooks.attempts_page = recording  # type: ignore[method-assign]
    assert events("2", None, hooks)[0] == ["evt-5", "evt-4"]
    assert asked == [(None, 3)]


def test_a_page_shows_each_attempt_as_the_contract_does():
    [view] = list_deliveries(CALLER, HOOK, "1", None, store(), KEY).items
    assert json.loads(view.model_dump_json(by_alias=True, exclude_none=True)) == {
        "eventId": "evt-5", "type": "workload.terminated", "attempt": 1,
        "at": "2026-11-29T12:05:00Z", "status": 500, "error": "HTTP 500", "state": "pending",
    }  # fmt: skip


@pytest.mark.parametrize(
    "scope",
    [
        CursorScope("whsub-2", "", "org-buyer", "webhook-deliveries"),  # another subscription's
        CursorScope(HOOK, "", "org-other", "webhook-deliveries"),
        CursorScope(HOOK, "", "org-buyer", "webhooks"),  # the subscription list's
        CursorScope(HOOK, "x", "org-buyer", "webhook-deliveries"),
    ],
)
def test_a_cursor_of_another_listing_is_a_400(scope):
    cursor = encode_cursor(Cursor("ATT#2026-11-29T12:04:00.000Z#evt-4#01"), scope, KEY)
    with pytest.raises(InvalidRequest) as refused:
        events("2", cursor, store())
    assert [d.field for d in refused.value.details] == ["cursor"]


def test_the_listings_own_cursor_starts_after_the_attempt_it_names():
    scope = CursorScope(HOOK, "", "org-buyer", "webhook-deliveries")
    cursor = encode_cursor(Cursor("ATT#2026-11-29T12:04:00.000Z#evt-4#01"), scope, KEY)
    assert events("2", cursor, store())[0] == ["evt-3", "evt-2"]


@pytest.mark.parametrize(
    ("caller", "hook"),
    [(OTHER, HOOK), (NO_EVENTS, HOOK), (CALLER, "whsub-3"), (CALLER, "whsub-9"), (CALLER, "x/y")],
)
def test_not_the_callers_orgs_subscription_is_the_one_404_for_both(caller, hook):
    hooks = store()
    with pytest.raises(NotFound):
        list_deliveries(caller, hook, None, None, hooks, KEY)
    hooks.deliveries[(hook, "evt-1")] = failed(3, hook)
    with pytest.raises(NotFound):
        retry_delivery(caller, hook, "evt-1", None, hooks, queued().append, NOW)


def failed(
    attempts: int, hook: str = HOOK, state: DeliveryState = DeliveryState.FAILED
) -> Delivery:
    return Delivery(hook, "evt-1", "workload.terminated", BODY, state, attempts=attempts)


def queued() -> list[DeliveryRequest]:
    return []


def test_a_failed_delivery_retried_queues_one_more_attempt_says_and_counts_it(caplog, monkeypatch):
    counted: list[tuple[str, object, float]] = []
    monkeypatch.setattr(
        webhook_deliveries.metrics, "add_metric",
        lambda name, unit, value: counted.append((name, unit, value)),
    )  # fmt: skip
    caplog.set_level(logging.DEBUG, logger="reservations")
    hooks, sent = store(), queued()
    hooks.deliveries[(HOOK, "evt-1")] = failed(8)
    answer = retry_delivery(CALLER, HOOK, "evt-1", "key-1", hooks, sent.append, NOW)
    assert answer.status == 202
    assert json.loads(answer.body) == {
        "eventId": "evt-1", "attempt": 9, "queuedAt": "2026-11-29T12:00:00Z"
    }  # fmt: skip
    assert sent == [
        DeliveryRequest(
            subscriptionId=HOOK, orgId="org-buyer", eventId="evt-1",
            eventType="workload.terminated", body=BODY, retryOf=8,
        )
    ]  # fmt: skip
    [line] = [r for r in caplog.records if r.name == "reservations"]
    assert (line.levelno, line.getMessage()) == (logging.INFO, "webhook retry queued")
    assert (line.subscriptionId, line.eventId, line.callerOrgId, line.attempt) == (
        HOOK, "evt-1", "org-buyer", 9,
    )  # fmt: skip
    assert counted == [("WebhookRetriesByHand", MetricUnit.Count, 1)]


@pytest.mark.parametrize("state", [DeliveryState.PENDING, DeliveryState.DELIVERED])
def test_only_a_failed_delivery_is_retried(state):
    hooks, sent = store(), queued()
    hooks.deliveries[(HOOK, "evt-1")] = failed(2, state=state)
    with pytest.raises(DeliveryNotFailed) as refused:
        retry_delivery(CALLER, HOOK, "evt-1", None, hooks, sent.append, NOW)
    assert refused.value.message.startswith(f"delivery of evt-1 is {state.value}, not failed: ")
    assert refused.value.retry_after is None
    assert sent == []


def test_an_unknown_or_malformed_event_is_a_404_and_a_malformed_key_a_400():
    hooks, sent = store(), queued()
    hooks.deliveries[(HOOK, "evt-1")] = failed(8)
    for event_id in ("evt-2", "evt/1"):
        with pytest.raises(NotFound):
            retry_delivery(CALLER, HOOK, event_id, None, hooks, sent.append, NOW)
    with pytest.raises(InvalidRequest):
        retry_delivery(CALLER, HOOK, "evt-1", "", hooks, sent.append, NOW)
    with pytest.raises(InvalidRequest):
        retry_delivery(CALLER, HOOK, "evt-1", "k\x00", hooks, sent.append, NOW)
    assert sent == []


@pytest.mark.parametrize("state", list(DeliveryState))
def test_no_delivery_of_a_disabled_subscription_is_retried(state):
    hooks, sent = store(), queued()
    hooks.subscriptions[("org-buyer", HOOK)] = hooks.subscriptions[("org-buyer", HOOK)].disabled(
        NOW
    )
    hooks.deliveries[(HOOK, "evt-1")] = failed(8, state=state)
    with pytest.raises(SubscriptionDisabled) as refused:
        retry_delivery(CALLER, HOOK, "evt-1", "key-1", hooks, sent.append, NOW)
    assert refused.value.message == (
        f"webhook {HOOK} is disabled after 5 days of failed deliveries; nothing was queued. "
        "Re-enable it by deleting it and subscribing again"
    )
    assert refused.value.retry_after is None
    assert sent == []


def history(
    hooks: FakeSubscriptionStore, state: DeliveryState, count: int
) -> FakeSubscriptionStore:
    """evt-7's delivery after ``count`` attempts, one a minute, the last leaving it ``state``."""
    for n in range(1, count + 1):
        made = DeliveryAttempt(
            HOOK, "evt-7", "workload.terminated", n, NOW + timedelta(minutes=n),
            AttemptResult(500, "HTTP 500"), DeliveryState.PENDING, NOW + timedelta(minutes=n + 1),
        )  # fmt: skip
        hooks.attempts.append(made)
    hooks.deliveries[(HOOK, "evt-7")] = Delivery(
        HOOK, "evt-7", "workload.terminated", BODY, state, count,
        NOW + timedelta(minutes=count), NOW + timedelta(minutes=count + 1),
    )  # fmt: skip
    return hooks


def test_one_delivery_shows_where_it_stands_and_every_attempt_newest_first():
    detail = get_delivery(CALLER, HOOK, "evt-7", history(store(), DeliveryState.PENDING, 3))
    shown = json.loads(detail.model_dump_json(by_alias=True, exclude_none=True))
    assert {k: v for k, v in shown.items() if k != "attempts"} == {
        "subscriptionId": HOOK, "eventId": "evt-7", "type": "workload.terminated",
        "state": "pending", "attemptCount": 3, "lastAttemptAt": "2026-11-29T12:03:00Z",
        "nextAttemptAt": "2026-11-29T12:04:00Z",
    }  # fmt: skip
    assert [a["attempt"] for a in shown["attempts"]] == [3, 2, 1]
    assert shown["attempts"][-1] == {
        "eventId": "evt-7", "type": "workload.terminated", "attempt": 1,
        "at": "2026-11-29T12:01:00Z", "status": 500, "error": "HTTP 500",
        "nextAttemptAt": "2026-11-29T12:02:00Z", "state": "pending",
    }  # fmt: skip


@pytest.mark.parametrize("state", [DeliveryState.DELIVERED, DeliveryState.FAILED])
def test_a_delivery_no_longer_pending_has_no_next_attempt_due(state):
    detail = get_delivery(CALLER, HOOK, "evt-7", history(store(), state, 2))
    assert (detail.state, detail.next_attempt_at, detail.attempt_count) == (state, None, 2)


def test_a_delivery_not_yet_attempted_is_pending_with_no_attempts():
    hooks = store()
    hooks.deliveries[(HOOK, "evt-7")] = Delivery(HOOK, "evt-7", "workload.terminated", BODY)
    detail = get_delivery(CALLER, HOOK, "evt-7", hooks)
    assert (detail.state, detail.attempt_count, detail.attempts) == (DeliveryState.PENDING, 0, [])
    assert (detail.last_attempt_at, detail.next_attempt_at) == (None, None)


@pytest.mark.parametrize(
    ("caller", "hook", "event_id"),
    [
        (OTHER, HOOK, "evt-7"),  # another org's subscription
        (NO_EVENTS, HOOK, "evt-7"),  # without events.read
        (CALLER, "whsub-3", "evt-7"),
        (CALLER, "whsub-9", "evt-7"),  # unknown subscription
        (CALLER, "x/y", "evt-7"),
        (CALLER, HOOK, "evt-1"),  # an event not delivered to it
        (CALLER, HOOK, "evt-2"),  # unknown event
        (CALLER, HOOK, "evt/7"),
        (CALLER, "whsub-2", "evt-7"),  # the caller's, but not delivered there
    ],
)
def test_one_delivery_not_the_callers_to_see_is_the_one_404(caller, hook, event_id):
    hooks = history(store(), DeliveryState.FAILED, 1)
    with pytest.raises(NotFound) as refused:
        get_delivery(caller, hook, event_id, hooks)
    assert refused.value.message == NotFound().message
