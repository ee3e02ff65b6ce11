"""A subscription's deliveries in-process over moto: the listing, newest first, a page at a
time; a failed delivery retried by hand (one message naming the attempts it failed after),
which the sender then attempts once more, to a receiver on 127.0.0.1, however often the
retry is asked; another org's subscription the one 404."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import boto3
import pytest
from standardwebhooks import Webhook

from devstack import fleet_documents as f
from devstack.api_events import webhook_event
from devstack.functions import FakeContext, invoke, load_function
from devstack.sqs_events import sqs_event
from reservations import endpoints
from reservations.kernel.http.resolver import key_cache
from reservations.kernel.settings import settings
from reservations.webhooks.models.api import SubscriptionCreate
from reservations.webhooks.models.domain import (
    AttemptResult,
    DeliveryRequest,
    DeliveryState,
    SigningSecrets,
    Subscription,
)
from reservations.webhooks.rules.attempts import MAX_ATTEMPTS, after_attempt
from reservations.webhooks.table.deliveries import DeliveryTable
from reservations.webhooks.table.subscriptions import SubscriptionTable
from tests.support.webhook_receiver import Receiver

pytestmark = pytest.mark.moto

BUYER, OTHER = "Bearer vl_local_test_buyer", "Bearer vl_local_test_other"
SUBSCRIPTION = "whsub-buyer0000000000000"
SECRET = "whsec_" + base64.b64encode(b"r" * 32).decode()
START = datetime.now(UTC).replace(microsecond=0) - timedelta(days=2)


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    names = ("list_webhook_deliveries", "get_webhook_delivery", "retry_webhook_delivery",
             "webhook_sender")  # fmt: skip
    return {name: load_function(name) for name in names}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver().start()
    yield running
    running.stop()


@pytest.fixture
def world(aws: Any, load_fleet: Any, monkeypatch: pytest.MonkeyPatch, receiver) -> str:
    keys = [
        {"key": "vl_local_test_buyer", "orgId": "org-spotbuyer", "permissions": ["events.read"]},
        {"key": "vl_local_test_other", "orgId": "org-other", "permissions": ["events.read"]},
    ]
    load_fleet(f.fleet([], extra_keys=keys))
    url = boto3.client("sqs").get_queue_url(QueueName="WebhookDeliveryQueue")["QueueUrl"]
    monkeypatch.setenv("WEBHOOK_DELIVERY_QUEUE_URL", url)
    monkeypatch.setenv("WEBHOOK_ALLOW_LOCAL_RECEIVER", "true")
    settings.cache_clear()
    made = Subscription(SUBSCRIPTION, "org-spotbuyer", receiver.local_url(),
                        SigningSecrets(SECRET), START)  # fmt: skip
    SubscriptionTable().commit(SubscriptionCreate("w-1", made, 0))
    yield url
    settings.cache_clear()


def attempts(event_id: str, results: list[AttemptResult], start: datetime) -> None:
    """The attempts the sender would have recorded, one a minute from ``start``."""
    table = DeliveryTable()
    request = DeliveryRequest(subscriptionId=SUBSCRIPTION, orgId="org-spotbuyer",
                              eventId=event_id, eventType="workload.terminated",
                              body='{"id":"' + event_id + '"}')  # fmt: skip
    for number, result in enumerate(results, start=1):
        before = table.load_delivery(SUBSCRIPTION, event_id)
        at = start + timedelta(minutes=number)
        after, record = after_attempt(before, request, number, result, at, 0.5)
        table.record_attempt(before, after, record)


def call(functions, route, authorization: str, subscription_id: str = SUBSCRIPTION,
         **extra: Any) -> Any:  # fmt: skip
    event = webhook_event(route, authorization, subscription_id, **extra)
    return invoke(functions[route.function], event)


def queued(url: str) -> list[dict[str, Any]]:
    sqs = boto3.client("sqs")
    return sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])


def test_the_attempts_are_listed_newest_first_a_page_at_a_time(functions, world):
    attempts("evt-ok", [AttemptResult(status=500), AttemptResult(status=204)], START)
    attempts("evt-down", [AttemptResult(error="connection refused")], START + timedelta(hours=1))
    first = call(functions, endpoints.LIST_DELIVERIES, BUYER, query={"limit": "2"})
    assert first.status == 200
    items = first.body["items"]
    assert [(i["eventId"], i["attempt"]) for i in items] == [("evt-down", 1), ("evt-ok", 2)]
    assert items[0] == {
        "eventId": "evt-down", "type": "workload.terminated", "attempt": 1,
        "at": items[0]["at"], "error": "connection refused",
        "nextAttemptAt": items[0]["nextAttemptAt"], "state": "pending",
    }  # fmt: skip
    assert items[1]["status"] == 204
    assert items[1]["state"] == "delivered"
    query = {"limit": "2", "cursor": first.body["nextCursor"]}
    second = call(functions, endpoints.LIST_DELIVERIES, BUYER, query=query)
    assert [(i["eventId"], i["attempt"]) for i in second.body["items"]] == [("evt-ok", 1)]
    assert "nextCursor" not in second.body


def test_one_delivery_is_read_with_its_attempts_newest_first(functions, world):
    attempts("evt-ok", [AttemptResult(status=500), AttemptResult(status=204)], START)
    attempts("evt-down", [AttemptResult(error="connection refused")], START + timedelta(hours=1))
    ok = call(functions, endpoints.GET_DELIVERY, BUYER, event_id="evt-ok")
    assert ok.status == 200
    assert [(a["attempt"], a.get("status"), a["state"]) for a in ok.body["attempts"]] == [
        (2, 204, "delivered"), (1, 500, "pending"),
    ]  # fmt: skip
    assert (ok.body["state"], ok.body["attemptCount"]) == ("delivered", 2)
    assert "nextAttemptAt" not in ok.body
    down = call(functions, endpoints.GET_DELIVERY, BUYER, event_id="evt-down").body
    listed = call(functions, endpoints.LIST_DELIVERIES, BUYER, query={"limit": "1"}).body
    assert down["attempts"] == listed["items"]  # the listing's shape, attempt for attempt
    assert (down["state"], down["nextAttemptAt"]) == (
        "pending",
        listed["items"][0]["nextAttemptAt"],
    )
    assert down["lastAttemptAt"] == listed["items"][0]["at"]


def test_another_orgs_subscription_is_the_one_404(functions, world):
    attempts("evt-ok", [AttemptResult(status=200)], START)
    unknown = call(functions, endpoints.LIST_DELIVERIES, OTHER, "whsub-nosuch00000000000")
    for route, extra in (
        (endpoints.LIST_DELIVERIES, {}),
        (endpoints.GET_DELIVERY, {"event_id": "evt-ok"}),
        (endpoints.RETRY_DELIVERY, {"event_id": "evt-ok"}),
    ):
        answer = call(functions, route, OTHER, **extra)
        assert answer.status == 404
        assert answer.body["error"] == unknown.body["error"]


def test_a_failed_delivery_retried_by_hand_is_attempted_once_more_and_delivered(
    functions, world, receiver
):
    attempts("evt-lost", [AttemptResult(status=503)] * MAX_ATTEMPTS, START)
    stored = DeliveryTable().load_delivery(SUBSCRIPTION, "evt-lost")
    assert stored is not None
    assert stored.state is DeliveryState.FAILED
    answer = call(functions, endpoints.RETRY_DELIVERY, BUYER, event_id="evt-lost")
    again = call(functions, endpoints.RETRY_DELIVERY, BUYER, event_id="evt-lost",
                 idempotency_key="retry-1")  # fmt: skip
    assert (answer.status, answer.body["attempt"]) == (202, MAX_ATTEMPTS + 1)
    assert again.status == 202
    messages = queued(world)
    assert len(messages) == 2  # asked twice: two copies, one attempt recorded
    arn = boto3.client("sqs").get_queue_attributes(QueueUrl=world, AttributeNames=["QueueArn"])
    event = sqs_event(messages, arn["Attributes"]["QueueArn"])
    assert functions["webhook_sender"].lambda_handler(event, FakeContext()) == {
        "batchItemFailures": []
    }
    # Both copies came in one batch, so both were sent; one attempt was recorded. The
    # receiver sees the same webhook-id twice and deduplicates.
    assert {r.headers["webhook-id"] for r in receiver.received} == {"evt-lost"}
    for request in receiver.received:
        Webhook(SECRET).verify(request.body, request.headers)
    delivered = DeliveryTable().load_delivery(SUBSCRIPTION, "evt-lost")
    assert delivered is not None
    assert (delivered.state, delivered.attempts) == (DeliveryState.DELIVERED, MAX_ATTEMPTS + 1)
    listed = call(functions, endpoints.LIST_DELIVERIES, BUYER, query={"limit": "1"})
    assert listed.body["items"][0]["attempt"] == MAX_ATTEMPTS + 1


def test_only_a_failed_delivery_is_retried(functions, world):
    attempts("evt-ok", [AttemptResult(status=200)], START)
    attempts("evt-waiting", [AttemptResult(status=500)], START)
    for event_id, state in (("evt-ok", "delivered"), ("evt-waiting", "pending")):
        answer = call(functions, endpoints.RETRY_DELIVERY, BUYER, event_id=event_id)
        # Not a conflict: asking again never succeeds, so no Retry-After invites it.
        assert (answer.status, answer.body["code"]) == (409, "delivery_not_failed")
        assert f"delivery of {event_id} is {state}, not failed" in answer.body["error"]
        assert "retry-after" not in {name.lower() for name in answer.headers}
    assert call(functions, endpoints.RETRY_DELIVERY, BUYER, event_id="evt-none").status == 404
    bad_key = call(functions, endpoints.RETRY_DELIVERY, BUYER, event_id="evt-ok",
                   idempotency_key="\x01")  # fmt: skip
    assert bad_key.status == 400
    assert queued(world) == []


def test_a_retry_on_a_disabled_subscription_is_refused_and_nothing_is_queued(
    functions, world, receiver
):
    attempts("evt-lost", [AttemptResult(status=503)] * MAX_ATTEMPTS, START)
    subscription = SubscriptionTable().load_subscription("org-spotbuyer", SUBSCRIPTION)
    assert subscription is not None
    DeliveryTable().put_subscription(subscription.disabled(START + timedelta(days=5)))
    answer = call(functions, endpoints.RETRY_DELIVERY, BUYER, event_id="evt-lost",
                  idempotency_key="retry-disabled")  # fmt: skip
    assert (answer.status, answer.body["code"]) == (409, "subscription_disabled")
    assert "disabled" in answer.body["error"]
    assert "deleting it and subscribing again" in answer.body["error"]
    assert "retry-after" not in {name.lower() for name in answer.headers}
    assert queued(world) == []
    # The same key asked again is refused again (nothing kept, nothing queued).
    again = call(functions, endpoints.RETRY_DELIVERY, BUYER, event_id="evt-lost",
                 idempotency_key="retry-disabled")  # fmt: skip
    assert (again.status, again.body) == (
        409,
        {**answer.body, "requestId": again.body["requestId"]},
    )
    listed = call(functions, endpoints.LIST_DELIVERIES, BUYER, query={"limit": "1"})
    assert listed.body["items"][0]["attempt"] == MAX_ATTEMPTS
    assert receiver.received == []


def test_one_delivery_is_two_requests_warm_three_cold_reading_its_own_items_only(
    functions, world, sent_requests
):
    """The subscription (GetItem) and one Query of the delivery and its attempts' copies;
    cold, the caller's key first. Other events' deliveries are never read."""
    attempts("evt-ok", [AttemptResult(status=500), AttemptResult(status=204)], START)
    for n in range(20):
        attempts(f"evt-ok{n}", [AttemptResult(status=500)], START + timedelta(seconds=n))
    key_cache.clear()
    sent_requests.clear()
    assert call(functions, endpoints.GET_DELIVERY, BUYER, event_id="evt-ok").status == 200
    assert sent_requests.sent == [("dynamodb", "GetItem")] * 2 + [("dynamodb", "Query")]
    assert sent_requests.items_read == [(3, 3)]  # the delivery and its two attempts
    sent_requests.clear()
    assert call(functions, endpoints.GET_DELIVERY, BUYER, event_id="evt-ok").status == 200
    assert sent_requests.sent == [("dynamodb", "GetItem"), ("dynamodb", "Query")]
    sent_requests.clear()
    assert call(functions, endpoints.GET_DELIVERY, BUYER, event_id="evt-none").status == 404
    assert sent_requests.sent == [("dynamodb", "GetItem"), ("dynamodb", "Query")]
    assert sent_requests.items_read == [(0, 0)]
