"""The relay's third outlet: each event queued for delivery to every webhook subscription
that takes it, one message per (subscription, event) on the delivery queue. Which
deliveries an event makes, and until when each is kept, is the fan-out rule's
(``webhooks.rules.fanout``), at the time the outlet's clock gives; this only reads the
subscriptions and the platform's org, and claims and queues what it decided.

Idempotent by (subscription, event): before its message is sent, the delivery's record is
put, pending with no attempt, unless the sender has already attempted it. A replayed stream
record, or a relay that crashed after queueing, finds the record: attempted, nothing is
sent again; not yet attempted, the message is sent again (the sender deals with the first
copy to record and drops the other). Nothing is lost: an event leaves the relay's mark only
once all its messages are on the queue.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime

from botocore.exceptions import BotoCoreError, ClientError

from reservations.kernel.aws import clients
from reservations.kernel.aws.batches import sized_batches
from reservations.kernel.aws.codec import from_attributes, to_attributes
from reservations.kernel.clock import utc_now
from reservations.kernel.envelope import StoredEvent
from reservations.kernel.settings import settings
from reservations.webhooks.models.domain import DeliveryRequest, Subscription
from reservations.webhooks.rules.fanout import PendingDelivery, orgs_to_notify, pending_deliveries
from reservations.webhooks.settings import webhook_delivery_queue_url
from reservations.webhooks.table.items import EXPIRES, delivery_item
from reservations.webhooks.table.platform import platform_key
from reservations.webhooks.table.subscriptions import SubscriptionTable

WEBHOOKS = "webhooks"
# SendMessageBatch takes 10 entries.
SEND_BATCH = 10
# The platform's org changes only by the keys command: read again after this long.
PLATFORM_TTL_SECONDS = 60.0

AwsFailure = (BotoCoreError, ClientError)


class WebhookOutlet:
    """Queues each event's webhook deliveries; clients are made on first use, not here."""

    name = WEBHOOKS

    def __init__(self, clock: Callable[[], datetime] = utc_now) -> None:
        self._hooks = SubscriptionTable()
        self._platform: tuple[float, str | None] | None = None
        self._clock = clock

    def deliver(self, events: Sequence[StoredEvent]) -> set[str]:
        """Queue every delivery of the events; the ids of those not all queued."""
        try:
            platform = self._platform_org_id()
        except AwsFailure:
            return {stored.id for stored in events}
        subscriptions: dict[str, list[Subscription]] = {}
        failed: set[str] = set()
        now, retention = self._clock(), settings().history_retention_days
        for stored in events:
            try:
                self._read(orgs_to_notify(stored, platform), subscriptions)
                made = pending_deliveries(stored, subscriptions, platform, now, retention)
                if not self._queue([d.request for d in made if self._claim(d)]):
                    failed.add(stored.id)
            except AwsFailure:
                failed.add(stored.id)
        return failed

    def _read(self, orgs: frozenset[str], known: dict[str, list[Subscription]]) -> None:
        """The subscriptions of each org not read yet in this batch (one Query each)."""
        for org_id in orgs - set(known):
            known[org_id] = list(self._hooks.load_hooks(org_id).subscriptions)

    def _claim(self, delivery: PendingDelivery) -> bool:
        """The delivery's record as decided, pending with no attempt; False when the sender
        has attempted it already (its message was sent and dealt with)."""
        retention = settings().history_retention_days
        expires = int(delivery.expires_at.timestamp())
        item = {**delivery_item(delivery.record, retention), EXPIRES: expires}
        try:
            clients.dynamodb().put_item(
                TableName=settings().table_name,
                Item=to_attributes(item),
                ConditionExpression="attribute_not_exists(PK) OR attempts = :none",
                ExpressionAttributeValues=to_attributes({":none": 0}),
            )
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            return False
        return True

    def _queue(self, requests: Sequence[DeliveryRequest]) -> bool:
        """Every message on the delivery queue; False when one was not taken."""
        bodies = [request.to_json() for request in requests]
        for batch in sized_batches(bodies, lambda body: len(body.encode()), SEND_BATCH):
            entries = [{"Id": str(n), "MessageBody": body} for n, body in enumerate(batch)]
            answer = clients.sqs().send_message_batch(
                QueueUrl=webhook_delivery_queue_url(), Entries=entries
            )
            if answer.get("Failed"):
                return False
        return True

    def _platform_org_id(self) -> str | None:
        """The platform operator's org (it sees every event), read at most once a minute."""
        now = time.monotonic()
        if self._platform is not None and now - self._platform[0] < PLATFORM_TTL_SECONDS:
            return self._platform[1]
        answer = clients.dynamodb().get_item(
            TableName=settings().table_name, Key=to_attributes(platform_key()), ConsistentRead=True
        )
        item = answer.get("Item")
        org_id = None if item is None else str(from_attributes(item)["orgId"])
        self._platform = (now, org_id)
        return org_id
