"""The webhook sender's function in-process over moto (table and queues from template.yaml),
delivering to a receiver on 127.0.0.1 through the local allowance: what it records, what it
holds back on the queue, what it reports, and what it never logs."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from standardwebhooks import Webhook

from devstack.functions import FakeContext, load_function
from devstack.sqs_events import sqs_event
from reservations.kernel.settings import settings
from reservations.webhooks.models.domain import DeliveryRequest, SigningSecrets, Subscription
from reservations.webhooks.table.deliveries import DeliveryTable
from reservations.webhooks.table.items import delivery_pk
from tests.support.webhook_receiver import Receiver, status

pytestmark = pytest.mark.moto

SECRET = "whsec_" + base64.b64encode(b"k" * 32).decode()
BODY = json.dumps({"specversion": "1.0", "id": "evt-9", "type": "workload.terminated"})


@pytest.fixture
def sender(aws, monkeypatch) -> Iterator[Any]:
    sqs = boto3.client("sqs")
    url = sqs.get_queue_url(QueueName="WebhookDeliveryQueue")["QueueUrl"]
    monkeypatch.setenv("WEBHOOK_DELIVERY_QUEUE_URL", url)
    monkeypatch.setenv("WEBHOOK_ALLOW_LOCAL_RECEIVER", "true")
    settings.cache_clear()
    yield load_function("webhook_sender")
    settings.cache_clear()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver().start()
    yield running
    running.stop()


def subscribe(url: str) -> None:
    DeliveryTable().put_subscription(
        Subscription(
            id="whsub-h1", org_id="org-spotbuyer", url=url, secrets=SigningSecrets(SECRET),
            created_at=datetime.now(UTC),
        )
    )  # fmt: skip


def received_batch() -> tuple[dict[str, Any], str]:
    """One delivery request sent to and received from the delivery queue, as the event
    source mapping hands it to the function; and the queue's URL."""
    sqs = boto3.client("sqs")
    url = sqs.get_queue_url(QueueName="WebhookDeliveryQueue")["QueueUrl"]
    request = DeliveryRequest(
        subscriptionId="whsub-h1", orgId="org-spotbuyer", eventId="evt-9",
        eventType="workload.terminated", body=BODY,
    )  # fmt: skip
    sqs.send_message(QueueUrl=url, MessageBody=request.to_json())
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
    return sqs_event(messages, arn["QueueArn"]), url


def partition(aws: Any) -> list[dict[str, Any]]:
    from reservations.kernel.aws.codec import from_attributes

    answer = aws.query(
        TableName="ReservationsTable",
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": delivery_pk("whsub-h1")}},
    )
    return [from_attributes(item) for item in answer["Items"]]


def kind(sk: str) -> str:
    return "COPY" if "#ATT#" in sk else sk.split("#")[0]


def test_a_delivered_event_is_recorded_and_its_message_done_with(sender, receiver, aws):
    subscribe(receiver.local_url())
    event, _url = received_batch()
    answer = sender.lambda_handler(event, FakeContext())
    assert answer == {"batchItemFailures": []}
    (request,) = receiver.received
    Webhook(SECRET).verify(request.body, request.headers)
    # the delivery (EVT#), its attempt (ATT#) and the attempt's copy beside the delivery
    items = {kind(item["SK"]): item for item in partition(aws)}
    assert set(items) == {"EVT", "ATT", "COPY"}
    assert items["EVT"]["state"] == "delivered"
    assert items["EVT"]["attempts"] == 1
    assert items["EVT"]["body"] == BODY
    assert items["EVT"]["expiresAtEpoch"] > datetime.now(UTC).timestamp() + 399 * 86400
    assert items["ATT"]["status"] == 200
    assert items["ATT"]["attempt"] == 1
    assert {k: v for k, v in items["COPY"].items() if k != "SK"} == {
        k: v for k, v in items["ATT"].items() if k != "SK"
    }


def test_a_failed_attempt_is_recorded_and_its_message_held_until_the_next(sender, aws):
    failing = Receiver(answer=lambda _r: status(500)).start()
    try:
        subscribe(failing.local_url())
        event, url = received_batch()
        answer = sender.lambda_handler(event, FakeContext())
    finally:
        failing.stop()
    message_id = event["Records"][0]["messageId"]
    assert answer == {"batchItemFailures": [{"itemIdentifier": message_id}]}
    items = {kind(item["SK"]): item for item in partition(aws)}
    assert items["EVT"]["state"] == "pending"
    assert items["ATT"]["status"] == 500
    assert "nextAttemptAt" in items["EVT"]
    # Held: the message is not visible again now (its visibility runs to the next attempt).
    again = boto3.client("sqs").receive_message(QueueUrl=url, MaxNumberOfMessages=10)
    assert again.get("Messages", []) == []
    subscription = DeliveryTable().load_subscription("org-spotbuyer", "whsub-h1")
    assert subscription is not None
    assert subscription.failing_since is not None


def test_an_unreadable_message_is_kept_for_the_dead_letter_queue(sender, aws):
    event = sqs_event(
        [{"MessageId": "m-bad", "ReceiptHandle": "r-bad", "Body": '{"not": "a request"}'}],
        "arn:aws:sqs:us-east-1:123456789012:WebhookDeliveryQueue",
    )
    assert sender.lambda_handler(event, FakeContext()) == {
        "batchItemFailures": [{"itemIdentifier": "m-bad"}]
    }


def test_no_secret_and_no_event_body_in_any_log_line(sender, receiver, aws, capfd, caplog):
    caplog.set_level(logging.INFO)
    subscribe(receiver.local_url())
    event, _url = received_batch()
    sender.lambda_handler(event, FakeContext())
    captured = capfd.readouterr()
    logs = "\n".join([captured.out, captured.err, *(r.getMessage() for r in caplog.records)])
    assert "webhook delivered" in logs
    assert SECRET not in logs
    assert SECRET.removeprefix("whsec_") not in logs
    assert receiver.received[0].headers["webhook-signature"] not in logs
    assert BODY not in logs
