"""The relay's webhook outlet over moto's table and queue: every delivery of an event on the
queue however many (SendMessageBatch takes ten), its record claimed pending with an expiry,
the platform's org read once a minute, and an event whose messages were not all taken (or
whose reads failed) reported for the backlog."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from reservations.kernel import clock
from reservations.kernel.aws import clients
from reservations.kernel.aws.codec import from_attributes, to_attributes
from reservations.kernel.event_log import record_position
from reservations.kernel.settings import settings
from reservations.webhooks.models.domain import DeliveryRequest, SigningSecrets, Subscription
from reservations.webhooks.rules.fanout import pending_deliveries
from reservations.webhooks.table import relay_outlet as webhook_outlet
from reservations.webhooks.table.deliveries import DeliveryTable
from reservations.webhooks.table.items import delivery_key
from reservations.webhooks.table.relay_outlet import WebhookOutlet
from tests.support import event_scenario as s

pytestmark = [pytest.mark.moto, pytest.mark.disable_socket]

TERMINATED = next(e for e in s.every_type() if e.event.type.value == "workload.terminated")
PLACED = next(e for e in s.every_type() if e.event.type.value == "workload.placed")


@pytest.fixture
def queue(aws: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    url = boto3.client("sqs").get_queue_url(QueueName="WebhookDeliveryQueue")["QueueUrl"]
    monkeypatch.setenv("WEBHOOK_DELIVERY_QUEUE_URL", url)
    settings.cache_clear()
    aws.put_item(
        TableName="ReservationsTable",
        Item=to_attributes({"PK": "PLATFORM", "SK": "PLATFORM", "orgId": "org-platform"}),
    )
    for n in range(11):
        subscribe(f"whsub-acme{n:02d}", "org-acme")
    subscribe("whsub-platform", "org-platform")
    yield url
    settings.cache_clear()


def subscribe(subscription_id: str, org_id: str) -> None:
    url = "https://hooks.example.com/"
    DeliveryTable().put_subscription(
        Subscription(subscription_id, org_id, url, SigningSecrets("x"), s.T0)
    )


def queued(url: str) -> list[DeliveryRequest]:
    sqs, found = boto3.client("sqs"), []
    while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages"):
        found += [DeliveryRequest.model_validate_json(m["Body"]) for m in batch]
    return found


def test_every_delivery_is_queued_in_batches_of_ten_each_claimed_pending_with_an_expiry(queue, aws):
    before = int(time.time())
    assert WebhookOutlet().deliver([TERMINATED]) == set()
    after = int(time.time())
    requests = queued(queue)
    expected = {f"whsub-acme{n:02d}" for n in range(11)} | {"whsub-platform"}
    assert sorted(r.subscription_id for r in requests) == sorted(expected)
    for request in requests:
        key = delivery_key(request.subscription_id, TERMINATED.id)
        item = from_attributes(aws.get_item(TableName="ReservationsTable",
                                            Key=to_attributes(key))["Item"])  # fmt: skip
        assert (item["state"], item["attempts"], item["body"]) == ("pending", 0, request.body)
        retention = 400 * 86_400
        assert before + retention <= item["expiresAtEpoch"] <= after + retention


class FailingSqs:
    """SQS that takes the first batch and fails an entry of every later one."""

    def __init__(self) -> None:
        self.batches: list[list[dict[str, str]]] = []

    def send_message_batch(self, **request: Any) -> dict[str, Any]:
        entries = request["Entries"]
        self.batches.append(entries)
        if len(self.batches) == 1:
            return {"Successful": [{"Id": e["Id"]} for e in entries], "Failed": []}
        return {"Failed": [{"Id": "0", "SenderFault": False, "Code": "InternalError"}]}


def test_an_event_not_all_queued_or_not_read_is_reported_and_the_platform_read_once_a_minute(
    queue, aws, monkeypatch
):
    now = [1000.0]
    monkeypatch.setattr(webhook_outlet.time, "monotonic", lambda: now[0])
    sqs = FailingSqs()
    monkeypatch.setattr(clients.sqs(), "send_message_batch", sqs.send_message_batch)
    outlet = WebhookOutlet()
    # TERMINATED: 12 messages, 2 batches, the second failing; PLACED: the same.
    assert outlet.deliver([TERMINATED]) == {TERMINATED.id}
    assert [len(batch) for batch in sqs.batches] == [10, 2]
    assert [e["Id"] for e in sqs.batches[0]] == [str(n) for n in range(10)]
    aws.delete_item(TableName="ReservationsTable",
                    Key=to_attributes({"PK": "PLATFORM", "SK": "PLATFORM"}))  # fmt: skip
    sqs.batches.clear()
    now[0] += webhook_outlet.PLATFORM_TTL_SECONDS - 1
    assert outlet.deliver([PLACED]) == {PLACED.id}  # the platform's org, as read 59 s ago
    assert [len(batch) for batch in sqs.batches] == [10, 2]
    now[0] = 1000.0 + webhook_outlet.PLATFORM_TTL_SECONDS
    sqs.batches.clear()
    assert outlet.deliver([PLACED]) == {PLACED.id}  # a minute on: read again, and gone
    assert [len(batch) for batch in sqs.batches] == [10, 1]

    def unreadable(*args: Any, **kwargs: Any) -> Any:
        raise ClientError({"Error": {"Code": "InternalServerError"}}, "GetItem")

    now[0] += webhook_outlet.PLATFORM_TTL_SECONDS
    monkeypatch.setattr(clients.dynamodb(), "get_item", unreadable)
    assert outlet.deliver([TERMINATED, PLACED]) == {TERMINATED.id, PLACED.id}


def test_the_platforms_org_is_read_consistently(monkeypatch):
    asked: list[dict[str, Any]] = []

    def get_item(**request: Any) -> Any:
        asked.append(request)
        return {"Item": to_attributes({"orgId": "org-platform"})}

    monkeypatch.setattr(clients, "dynamodb", lambda: SimpleNamespace(get_item=get_item))
    assert WebhookOutlet()._platform_org_id() == "org-platform"
    assert asked == [
        {
            "TableName": "ReservationsTable",
            "Key": {"PK": {"S": "PLATFORM"}, "SK": {"S": "PLATFORM"}},
            "ConsistentRead": True,
        }
    ]


class _March1st(datetime):
    """The clock at 2026-03-01 12:00 UTC, as ``datetime.now`` gives it in either form."""

    @classmethod
    def now(cls, tz: Any = None) -> Any:
        moment = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
        return moment if tz is not None else moment.astimezone().replace(tzinfo=None)


def test_a_claimed_delivery_expires_its_retention_after_now_in_utc_whatever_the_zone(monkeypatch):
    """Counted on the machine's local clock, a zone's summer time would move the expiry."""
    put: list[dict[str, Any]] = []
    dynamodb = SimpleNamespace(put_item=lambda **request: put.append(request))
    monkeypatch.setattr(clients, "dynamodb", lambda: dynamodb)
    monkeypatch.setattr(clock, "datetime", _March1st)
    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    retention = settings().history_retention_days
    try:
        hook = Subscription("whsub-1", "org-platform", "https://hooks.example.com/",
                            SigningSecrets("x"), s.T0)  # fmt: skip
        now = clock.utc_now()
        [made] = pending_deliveries(
            TERMINATED, {"org-platform": [hook]}, "org-platform", now, retention
        )
        assert WebhookOutlet()._claim(made) is True
    finally:
        monkeypatch.undo()
        time.tzset()
    expected = datetime(2026, 3, 1, 12, 0, tzinfo=UTC) + timedelta(days=retention)
    assert from_attributes(put[0]["Item"])["expiresAtEpoch"] == int(expected.timestamp())


def test_an_event_handed_over_again_goes_to_no_subscription_made_since_it_was_recorded(queue):
    recorded = s.T0 + timedelta(hours=1)
    stored = replace(PLACED, position=record_position(recorded, PLACED.id))
    assert WebhookOutlet().deliver([stored]) == set()
    first = {r.subscription_id for r in queued(queue)}
    DeliveryTable().put_subscription(Subscription(
        "whsub-newer", "org-acme", "https://hooks.example.com/", SigningSecrets("x"),
        recorded + timedelta(seconds=1),
    ))  # fmt: skip

    assert WebhookOutlet().deliver([stored]) == set()  # the relay, again

    assert "whsub-newer" not in first | {r.subscription_id for r in queued(queue)}
