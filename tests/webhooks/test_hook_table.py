"""An org's webhook partition as DynamoDB takes it: the counter every subscribe and delete
is conditioned on (absent is 0), a rotation conditioned on the secret read, and a
subscription's attempts read backwards a page at a time, and one delivery with all its
attempts."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from reservations.kernel.aws import clients, queries, transactions
from reservations.kernel.aws.codec import from_attributes
from reservations.kernel.idempotency.models import AnswerRecord, IdempotentRequest, Outcome
from reservations.kernel.writes import WriteConflict
from reservations.webhooks.models.api import SecretRotation, SubscriptionCreate, SubscriptionDelete
from reservations.webhooks.models.domain import (
    AttemptResult,
    Delivery,
    DeliveryAttempt,
    DeliveryState,
    SigningSecrets,
    Subscription,
)
from reservations.webhooks.table.deliveries import DeliveryTable
from reservations.webhooks.table.items import attempt_sk
from reservations.webhooks.table.subscriptions import SubscriptionTable

pytestmark = [pytest.mark.moto, pytest.mark.disable_socket]

AT = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
OLD, NEW = "whsec_" + "A" * 44, "whsec_" + "B" * 44


def hook(subscription_id: str) -> Subscription:
    return Subscription(
        subscription_id, "org-acme", "https://hooks.example.com/in", SigningSecrets(OLD), AT,
        types=frozenset({"workload.terminated"}), description="pager",
    )  # fmt: skip


def test_the_counter_conditions_every_subscribe_and_delete_and_a_rotation_its_secret(aws):
    table = SubscriptionTable()
    assert table.load_hooks("org-acme").count == 0
    table.commit(SubscriptionCreate("w-1", hook("whsub-1"), 0))  # no counter yet: 0
    with pytest.raises(WriteConflict):
        table.commit(SubscriptionCreate("w-2", hook("whsub-2"), 0))  # the counter moved
    table.commit(SubscriptionCreate("w-3", hook("whsub-2"), 1))
    with pytest.raises(WriteConflict):
        table.commit(SubscriptionCreate("w-4", hook("whsub-2"), 2))  # it exists already
    hooks = table.load_hooks("org-acme")
    assert (hooks.count, [s.id for s in hooks.subscriptions]) == (2, ["whsub-1", "whsub-2"])
    assert hooks.subscriptions[0] == hook("whsub-1")
    with pytest.raises(WriteConflict):
        table.commit(SubscriptionDelete("w-5", hook("whsub-1"), 1))  # not the count read
    with pytest.raises(WriteConflict):
        table.commit(SubscriptionDelete("w-6", hook("whsub-9"), 2))  # no such subscription
    table.commit(SubscriptionDelete("w-7", hook("whsub-1"), 2))
    hooks = table.load_hooks("org-acme")
    assert (hooks.count, [s.id for s in hooks.subscriptions]) == (1, ["whsub-2"])
    rotated = SigningSecrets(NEW, OLD, AT + timedelta(hours=24))
    after = replace(hook("whsub-2"), secrets=rotated)
    with pytest.raises(WriteConflict):
        table.commit(SecretRotation("w-8", after, SigningSecrets(NEW)))  # not the secret read
    table.commit(SecretRotation("w-9", after, SigningSecrets(OLD)))
    assert table.load_subscription("org-acme", "whsub-2") == after
    assert table.load_hooks("org-other").count == 0


def attempt(minute: int, number: int = 1) -> DeliveryAttempt:
    return DeliveryAttempt(
        "whsub-1", f"evt-{minute}", "workload.terminated", number,
        AT + timedelta(minutes=minute), AttemptResult(500), DeliveryState.PENDING,
    )  # fmt: skip


def test_the_attempts_are_read_newest_first_from_before_the_one_named(aws):
    table = DeliveryTable()
    for minute in range(1, 6):
        delivery = Delivery("whsub-1", f"evt-{minute}", "workload.terminated", "{}")
        table.record_attempt(None, replace(delivery, attempts=1), attempt(minute))
    hooks = SubscriptionTable()
    first = hooks.attempts_page("whsub-1", None, 2)
    assert [a.event_id for a in first] == ["evt-5", "evt-4"]
    assert first[0] == replace(attempt(5), next_attempt_at=None)
    after = hooks.attempts_page("whsub-1", attempt_sk(first[-1]), 2)
    assert [a.event_id for a in after] == ["evt-3", "evt-2"]
    rest = hooks.attempts_page("whsub-1", attempt_sk(after[-1]), 5)
    assert [a.event_id for a in rest] == ["evt-1"]
    assert [a.event_id for a in hooks.attempts_page("whsub-1", None, 9)] == [
        "evt-5", "evt-4", "evt-3", "evt-2", "evt-1",
    ]  # fmt: skip
    assert hooks.attempts_page("whsub-2", None, 9) == []


def test_a_page_is_one_query_naming_what_it_uses_and_reading_one_more_at_most(aws, monkeypatch):
    asked: list[dict[str, Any]] = []
    dynamodb = clients.dynamodb()
    query = dynamodb.query

    def spy(**request: Any) -> Any:
        asked.append(request)
        return query(**request)

    monkeypatch.setattr(dynamodb, "query", spy)
    SubscriptionTable().attempts_page("whsub-1", None, 2)
    [request] = asked
    named = set(re.findall(r":\w+", request["KeyConditionExpression"]))
    assert named == set(request["ExpressionAttributeValues"])
    assert (request["Limit"], request["ScanIndexForward"]) == (3, False)


def test_a_keyed_answer_is_kept_once_and_read_back(aws):
    table = SubscriptionTable()
    outcome = Outcome(201, '{"id":"whsub-1"}', (("Location", "/v1/webhooks/whsub-1"),))
    answer = AnswerRecord(IdempotentRequest("scope-1", "hash-1"), outcome, AT,
                          AT + timedelta(hours=24))  # fmt: skip
    assert table.stored_answer("scope-1") is None
    assert table.keep_answer(answer) is None
    kept = table.stored_answer("scope-1")
    assert kept is not None
    assert (kept.request_hash, kept.outcome) == ("hash-1", outcome)


def test_a_hook_write_is_one_transaction_under_its_write_id_with_the_keys_record(monkeypatch):
    sent: list[tuple[Any, ...]] = []
    monkeypatch.setattr(transactions, "run", lambda *call: sent.append(call))
    answer = AnswerRecord(IdempotentRequest("scope-1", "hash-1"), Outcome(201, "{}"), AT, AT)
    SubscriptionTable().commit(SubscriptionCreate("w-1", hook("whsub-1"), 0), answer)
    [(actions, token, record_at)] = sent
    assert (token, record_at) == ("w-1", len(actions) - 1)
    assert from_attributes(actions[-1]["Put"]["Item"])["PK"] == "IDEMPOTENCY#scope-1"


def test_an_orgs_hooks_are_read_consistently(monkeypatch):
    asked: list[dict[str, Any]] = []

    def query(**request: Any) -> Any:
        asked.append(request)
        return {"Items": []}

    monkeypatch.setattr(
        queries, "clients", SimpleNamespace(dynamodb=lambda: SimpleNamespace(query=query))
    )
    assert SubscriptionTable().load_hooks("org-acme").count == 0
    assert [request["ConsistentRead"] for request in asked] == [True]


def test_one_delivery_is_read_with_every_attempt_of_it_and_no_other_events(aws):
    table = DeliveryTable()
    delivery: Delivery | None = None
    # evt-1 and evt-1.5 and evt-10: ids that share a prefix with evt-1 stay out of its range
    for event_id, attempts in (("evt-1", 3), ("evt-1.5", 1), ("evt-10", 2)):
        delivery = None
        for number in range(1, attempts + 1):
            made = replace(attempt(number, number), event_id=event_id)
            after = Delivery("whsub-1", event_id, "workload.terminated", "{}", attempts=number,
                             last_attempt_at=made.at)  # fmt: skip
            table.record_attempt(delivery, after, made)
            delivery = after
    found = SubscriptionTable().load_delivery_attempts("whsub-1", "evt-1")
    assert found is not None
    read, attempts = found
    assert (read.event_id, read.attempts, read.state) == ("evt-1", 3, DeliveryState.PENDING)
    assert [(a.event_id, a.attempt) for a in attempts] == [("evt-1", 3), ("evt-1", 2), ("evt-1", 1)]
    assert attempts[-1] == replace(attempt(1, 1), event_id="evt-1", next_attempt_at=None)
    assert SubscriptionTable().load_delivery_attempts("whsub-1", "evt-2") is None
    assert SubscriptionTable().load_delivery_attempts("whsub-2", "evt-1") is None
    # the listing still shows each attempt once
    assert len(SubscriptionTable().attempts_page("whsub-1", None, 20)) == 6
