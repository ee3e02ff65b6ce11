"""The issue's judgement, over the relay's fan-out and the sender: a burst of events, every
type several times, fanned out to two orgs' subscriptions as the relay does it (some queued
twice, as a replayed stream record would), delivered to receivers on 127.0.0.1 that fail half
of all requests (a 500 or garbage), on a clock the test moves. In the end no event is missing
or unverifiable at either receiver, each arrives as its org sees it, and nothing is left."""

from __future__ import annotations

import base64
import threading
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
import standardwebhooks.webhooks
from standardwebhooks import Webhook

from reservations.webhooks.models.domain import DeliveryState, SigningSecrets, Subscription
from reservations.webhooks.rules.fanout import deliveries_for
from reservations.webhooks.sender import SenderPorts
from tests.support import event_scenario as s
from tests.support.webhook_fakes import FakeDeliveryQueue, FakeDeliveryStore
from tests.support.webhook_receiver import Received, garbage, status

pytestmark = pytest.mark.allow_hosts(["127.0.0.1"])

ROUNDS = 4  # every type, four times over: 52 events
SECRETS = {
    "owner": "whsec_" + base64.b64encode(b"o" * 32).decode(),
    "workload_org": "whsec_" + base64.b64encode(b"w" * 32).decode(),
}


class HalfFailing:
    """Fails every odd request of each delivery (its first, third...): half of all
    requests, alternately a 500 and garbage; a lock, as requests come on threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: Counter[str] = Counter()

    def __call__(self, received: Received):  # type: ignore[no-untyped-def]
        with self.lock:
            self.seen[received.headers["webhook-id"]] += 1
            count = self.seen[received.headers["webhook-id"]]
        if count % 2 == 0:
            return status(200)
        return status(500) if count % 4 == 1 else garbage


def verified(secret: str, request: Received, monkeypatch) -> object:  # type: ignore[no-untyped-def]
    """The body as the standardwebhooks package verifies it when it arrives: its clock at
    the request's own timestamp (the test's clock ran ahead of the real one)."""
    sent_at = datetime.fromtimestamp(int(request.headers["webhook-timestamp"]), UTC)

    class AtArrival(datetime):
        @classmethod
        def now(cls, tz=None):  # type: ignore[no-untyped-def, override]
            return sent_at

    with monkeypatch.context() as patched:
        patched.setattr(standardwebhooks.webhooks, "datetime", AtArrival)
        return Webhook(secret).verify(request.body, request.headers)


def test_a_burst_to_receivers_failing_half_the_time_arrives_whole_and_verified(
    clock, make_client, receivers, monkeypatch
):
    store, queue = FakeDeliveryStore(), FakeDeliveryQueue(clock)
    ports = SenderPorts(store, queue, make_client(seconds=1.0, allow_local=True), clock,
                        jitter=lambda: 0.5)  # fmt: skip
    endpoints = {kind: receivers(answer=HalfFailing()) for kind in SECRETS}
    subscriptions: dict[str, list[Subscription]] = {}
    for kind, receiver in endpoints.items():
        org = s.CALLERS[kind][1]
        made = Subscription(f"whsub-{kind.replace('_', '')}", org, receiver.local_url(),
                            SigningSecrets(SECRETS[kind]), clock.now)  # fmt: skip
        store.add(made)
        subscriptions[org] = [made]
    events = [
        replace(e, event=replace(e.event, id=f"{e.id}-r{n}"))  # every round's events its own
        for n in range(ROUNDS)
        for e in s.every_type(clock.now - timedelta(hours=n + 1))
    ]
    queued = 0
    for number, stored in enumerate(events):
        for request in deliveries_for(stored, subscriptions, "org-platform"):
            queue.send(request)
            queued += 1
            if number % 5 == 0:  # a replayed stream record: the same delivery queued again
                queue.send(request)
    queue.run(ports, until=clock.now + timedelta(days=2))
    for kind, receiver in endpoints.items():
        expected = {e.id: e for e in events if kind in s.SEES[e.event.type.value]}
        arrived: dict[str, object] = {}
        for request in receiver.received:
            body = verified(SECRETS[kind], request, monkeypatch)  # raises if it does not
            arrived[request.headers["webhook-id"]] = body
        assert set(arrived) == set(expected), kind
        for event_id, stored in expected.items():
            assert arrived[event_id] == stored.event.envelope(kind == "owner")
        failures = sum(
            1 for count in receiver.answer.seen.values() for n in range(count) if n % 2 == 0
        )
        assert failures >= len(expected)  # each failed at least once before it arrived
    assert queue.messages == {}
    assert len(store.deliveries) == queued
    assert {d.state for d in store.deliveries.values()} == {DeliveryState.DELIVERED}
    print(f"\nburst: {len(events)} events, {queued} deliveries, {queue.invocations} invocations")
