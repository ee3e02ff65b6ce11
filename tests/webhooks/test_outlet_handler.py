"""The relay's webhook outlet in-process over moto: an event of every type relayed through
the stream queues one delivery per (active subscription of an org that may see it, whose
types take it), its body the event as that org sees it; queued again, nothing the sender has
attempted is sent twice; an outage of the queue loses nothing (the backlog queues it)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import boto3
import pytest

from devstack import fleet_documents as f
from devstack.functions import FakeContext, load_function
from reservations.kernel.aws import clients
from reservations.kernel.settings import settings
from reservations.webhooks.models.api import SubscriptionCreate
from reservations.webhooks.models.domain import (
    AttemptResult,
    DeliveryRequest,
    SigningSecrets,
    Subscription,
    SubscriptionStatus,
)
from reservations.webhooks.rules.attempts import after_attempt
from reservations.webhooks.table.deliveries import DeliveryTable
from reservations.webhooks.table.relay_outlet import WebhookOutlet
from reservations.webhooks.table.subscriptions import SubscriptionTable
from tests.support import event_scenario as s
from tests.support.event_table import StreamRelay, name_workload_orgs, write_events

pytestmark = pytest.mark.moto

U4, U5 = "0000:04:00.0", "0000:05:00.0"
NOW = datetime.now(UTC)
# subscription id -> (caller kind of its org, types or None, status)
SUBSCRIPTIONS = {
    "whsub-operator0000000000": ("operator", None, SubscriptionStatus.ACTIVE),
    "whsub-owner0000000000000": ("owner", None, SubscriptionStatus.ACTIVE),
    "whsub-buyerterminations0": (
        "workload_org",
        frozenset({"workload.termination_requested", "workload.terminated"}),
        SubscriptionStatus.ACTIVE,
    ),
    "whsub-managerdisabled000": ("manager", None, SubscriptionStatus.DISABLED),
    "whsub-stranger0000000000": ("stranger", None, SubscriptionStatus.ACTIVE),
}


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    return {name: load_function(name) for name in ("event_relay", "event_backlog")}


@pytest.fixture
def world(aws: Any, load_fleet: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    reservations = [
        f.reservation("res-1", [U4]),
        f.reservation("res-2", [U5], managingOrgIds=["org-reclaimer"], allowedOrgIds=["org-lab2"]),
    ]
    node = f.node("node-a", [f.unit(U4), f.unit(U5)], reservations, [f.workload("vm-1", [U5])])
    load_fleet(s.with_feed_permissions(f.fleet([node], extra_keys=s.fleet_keys())))
    name_workload_orgs(aws, "node-a", ["org-spotbuyer"])
    url = boto3.client("sqs").get_queue_url(QueueName="WebhookDeliveryQueue")["QueueUrl"]
    monkeypatch.setenv("WEBHOOK_DELIVERY_QUEUE_URL", url)
    settings.cache_clear()
    counts: dict[str, int] = {}
    for subscription_id, (kind, types, status) in SUBSCRIPTIONS.items():
        org = s.CALLERS[kind][1]
        made = Subscription(subscription_id, org, "https://hooks.example.com/" + kind,
                            SigningSecrets("whsec_x"), NOW, types=types, status=status)  # fmt: skip
        SubscriptionTable().commit(
            SubscriptionCreate("w-" + subscription_id, made, counts.get(org, 0))
        )
        counts[org] = counts.get(org, 0) + 1
    yield url
    settings.cache_clear()


def queued(url: str) -> list[DeliveryRequest]:
    """Every message on the delivery queue now (received, then left invisible)."""
    sqs, found = boto3.client("sqs"), []
    while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages"):
        found += [DeliveryRequest.model_validate_json(m["Body"]) for m in batch]
    return found


def expected(events: list[Any]) -> set[tuple[str, str]]:
    """(subscription, event) for each active subscription whose org sees the event and
    whose types take it: the contract's visibility table, by hand."""
    return {
        (subscription_id, e.id)
        for e in events
        for subscription_id, (kind, types, status) in SUBSCRIPTIONS.items()
        if status is SubscriptionStatus.ACTIVE
        and kind in s.SEES[e.event.type.value]
        and (types is None or e.event.type.value in types)
    }


def recent() -> datetime:
    return (datetime.now(UTC) - timedelta(hours=1)).replace(microsecond=0)


def test_each_event_is_queued_once_for_each_subscription_that_may_see_and_takes_it(
    world, functions
):
    events = write_events(s.every_type(recent()))
    StreamRelay(boto3.client("dynamodb"), functions["event_relay"]).run()
    requests = queued(world)
    pairs = [(r.subscription_id, r.event_id) for r in requests]
    assert sorted(pairs) == sorted(expected(events))
    by_id = {e.id: e for e in events}
    for request in requests:
        stored = by_id[request.event_id]
        kind = SUBSCRIPTIONS[request.subscription_id][0]
        assert request.org_id == s.CALLERS[kind][1]
        assert request.event_type == stored.event.type.value
        assert json.loads(request.body) == stored.event.envelope(kind in s.SEES_KEY_IDS)


def test_a_delivery_the_sender_attempted_is_not_queued_again_one_not_attempted_is(world):
    [stored] = write_events(
        [e for e in s.every_type(recent()) if e.event.type.value == "workload.terminated"]
    )
    outlet = WebhookOutlet()
    assert outlet.deliver([stored]) == set()
    first = queued(world)
    assert len(first) == 3  # the operator's, the owner's and the buyer's subscriptions
    attempted = next(r for r in first if r.subscription_id == "whsub-owner0000000000000")
    after, record = after_attempt(None, attempted, 1, AttemptResult(status=200), NOW, 0.5)
    before = DeliveryTable().load_delivery(attempted.subscription_id, attempted.event_id)
    DeliveryTable().record_attempt(before, after, record)
    assert outlet.deliver([stored]) == set()  # a replayed stream record
    again = queued(world)
    assert sorted(r.subscription_id for r in again) == sorted(
        r.subscription_id for r in first if r is not attempted
    )
    delivery = DeliveryTable().load_delivery(attempted.subscription_id, attempted.event_id)
    assert delivery is not None
    assert delivery.attempts == 1


def test_a_queue_outage_leaves_the_event_marked_and_the_backlog_queues_it(
    world, functions, monkeypatch
):
    events = write_events(s.every_type(recent() - timedelta(minutes=10)))
    sqs = clients.sqs()

    def down(**_request: Any) -> Any:
        raise sqs.exceptions.QueueDoesNotExist({"Error": {"Code": "QueueDoesNotExist"}}, "Send")

    with monkeypatch.context() as outage:
        outage.setattr(sqs, "send_message_batch", down)
        StreamRelay(boto3.client("dynamodb"), functions["event_relay"]).run()
    assert queued(world) == []
    monkeypatch.setenv("EVENT_RELAY_GRACE_SECONDS", "0")
    settings.cache_clear()
    functions["event_backlog"].lambda_handler({}, FakeContext())
    pairs = [(r.subscription_id, r.event_id) for r in queued(world)]
    assert sorted(pairs) == sorted(expected(events))
