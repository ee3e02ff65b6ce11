"""Deliveries end to end over the use case: the queue and the table in memory, the clock the
test's, the endpoints real receivers on 127.0.0.1. Signed deliveries verify with the
standardwebhooks package; outages are retried on the schedule, then failed; 5 days of
failures disable the subscription; a crash loses nothing; a slow endpoint delays no other."""

from __future__ import annotations

import base64
import itertools
import json
import threading
from datetime import UTC, datetime, timedelta

import pytest
from standardwebhooks import Webhook

from reservations.webhooks.models.domain import (
    DeliveryRequest,
    DeliveryState,
    SigningSecrets,
    Subscription,
    SubscriptionStatus,
)
from reservations.webhooks.sender import SenderPorts
from tests.support.webhook_fakes import Clock, Crash, FakeDeliveryQueue, FakeDeliveryStore
from tests.support.webhook_receiver import Received, garbage, hang, status

pytestmark = pytest.mark.allow_hosts(["127.0.0.1"])

SECRET = "whsec_" + base64.b64encode(b"s" * 32).decode()
NEW_SECRET = "whsec_" + base64.b64encode(b"n" * 32).decode()
SCHEDULE = [
    timedelta(seconds=5), timedelta(minutes=5), timedelta(minutes=30), timedelta(hours=2),
    timedelta(hours=5), timedelta(hours=10), timedelta(hours=10),
]  # fmt: skip


@pytest.fixture
def clock() -> Clock:
    """Starts at the real time (receivers verify the signature's timestamp against theirs),
    then moves only when a test moves it."""
    return Clock(datetime.now(UTC).replace(microsecond=0))


def event(event_id: str = "evt-1", event_type: str = "workload.termination_requested") -> str:
    """A stand-in for the event model: a CloudEvents 1.0 envelope as the org feed has it."""
    return json.dumps(
        {
            "specversion": "1.0", "id": event_id, "type": event_type,
            "source": "/v1/nodes/node-a1", "subject": "workloads/vm-17",
            "time": "2026-12-01T05:08:47.123Z", "datacontenttype": "application/json",
            "data": {"reservationId": "res-a-active", "unitIds": ["0000:04:00.0"],
                     "reason": "lab needs them", "requestedAt": "2026-12-01T05:08:47Z"},
        },
        separators=(",", ":"),
    )  # fmt: skip


class World:
    """A subscription per receiver, the store, the queue, and the sender's ports."""

    def __init__(self, clock: Clock, client, jitter: float = 0.5) -> None:
        self.clock = clock
        self.store = FakeDeliveryStore()
        self.queue = FakeDeliveryQueue(clock)
        self.ports = SenderPorts(self.store, self.queue, client, clock, jitter=lambda: jitter)

    def subscribe(self, url: str, name: str = "whsub-one", **fields: object) -> Subscription:
        values: dict[str, object] = {"secrets": SigningSecrets(SECRET), **fields}
        subscription = Subscription(
            id=name, org_id="org-spotbuyer", url=url, created_at=self.clock.now,
            **values,  # type: ignore[arg-type]
        )  # fmt: skip
        self.store.add(subscription)
        return subscription

    def publish(self, subscription_id: str = "whsub-one", event_id: str = "evt-1") -> str:
        body = event(event_id)
        return self.queue.send(
            DeliveryRequest(subscriptionId=subscription_id, orgId="org-spotbuyer",
                            eventId=event_id, eventType="workload.termination_requested",
                            body=body)
        )  # fmt: skip

    def run(self, days: float = 3) -> None:
        self.queue.run(self.ports, until=self.clock.now + timedelta(days=days))


@pytest.fixture
def world(clock, make_client):
    return World(clock, make_client(seconds=0.5, allow_local=True))


def failing(times: int, how):
    """An answer that fails the first ``times`` requests (``how``), then answers 200."""
    seen = []

    def answer(received: Received):
        seen.append(received)
        return how if len(seen) <= times else status(200)

    return answer


# --- signed --------------------------------------------------------------------------------


def test_a_delivery_verifies_with_the_standard_webhooks_package(world, receivers):
    receiver = receivers()
    world.subscribe(receiver.local_url())
    world.publish()
    world.run()
    (request,) = receiver.received
    assert Webhook(SECRET).verify(request.body, request.headers) == json.loads(event())
    assert request.headers["webhook-id"] == "evt-1"
    assert request.headers["content-type"] == "application/json"
    assert world.store.deliveries["whsub-one", "evt-1"].state is DeliveryState.DELIVERED
    assert world.queue.messages == {}


def test_during_a_rotation_both_secrets_verify_and_after_24_hours_only_the_new(
    world, receivers, clock
):
    receiver = receivers()
    rotated = SigningSecrets(SECRET).rotated(NEW_SECRET, clock.now - timedelta(hours=1))
    world.subscribe(receiver.local_url(), secrets=rotated)
    world.publish(event_id="evt-1")
    world.run()
    during = receiver.received[0]
    assert len(during.headers["webhook-signature"].split(" ")) == 2
    Webhook(NEW_SECRET).verify(during.body, during.headers)
    Webhook(SECRET).verify(during.body, during.headers)
    # A day later (signed at the later time, checked here as a receiver would then).
    clock.now += timedelta(hours=23, minutes=1)
    world.publish(event_id="evt-2")
    world.run()
    after = receiver.received[1]
    (signature,) = after.headers["webhook-signature"].split(" ")
    at = datetime.fromtimestamp(int(after.headers["webhook-timestamp"]), clock.now.tzinfo)
    assert signature == Webhook(NEW_SECRET).sign("evt-2", at, after.body)


# --- retried, then failed ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("how", "status_code", "error"),
    [
        (status(500), 500, None),
        (garbage, None, "not an HTTP answer (BadStatusLine)"),
        ("hang", None, "no answer within 0.5 s"),
        (status(302, "https://elsewhere.example/"), 302, "redirects are not followed"),
    ],
)
def test_a_failing_endpoint_is_retried_on_the_schedule_until_it_answers(
    world, receivers, release, clock, how, status_code, error
):
    answer = hang(release) if how == "hang" else how
    receiver = receivers(answer=failing(3, answer))
    world.subscribe(receiver.local_url())
    start = clock.now
    world.publish()
    world.run()
    attempts = world.store.attempts_of("evt-1")
    assert [a.attempt for a in attempts] == [1, 2, 3, 4]
    assert [(a.result.status, a.result.error) for a in attempts[:3]] == [(status_code, error)] * 3
    assert attempts[3].result.status == 200
    # Each attempt when the one before scheduled it: +5 s, +5 min, +30 min (jitter fixed).
    assert [a.at - start for a in attempts] == [
        timedelta(),
        SCHEDULE[0],
        SCHEDULE[0] + SCHEDULE[1],
        sum(SCHEDULE[:3], timedelta()),
    ]
    assert [a.next_attempt_at for a in attempts] == [a.at for a in attempts[1:]] + [None]
    assert [a.state for a in attempts] == [DeliveryState.PENDING] * 3 + [DeliveryState.DELIVERED]
    assert len({r.headers["webhook-id"] for r in receiver.received}) == 1
    assert world.queue.messages == {}


def test_an_endpoint_down_for_the_whole_schedule_leaves_the_delivery_failed(
    world, receivers, clock
):
    receiver = receivers()
    url = receiver.local_url()
    receiver.stop()  # nothing listens there any more
    world.subscribe(url)
    start = clock.now
    world.publish()
    world.run(days=3)
    attempts = world.store.attempts_of("evt-1")
    assert len(attempts) == 8
    assert [b.at - a.at for a, b in itertools.pairwise(attempts)] == SCHEDULE
    assert attempts[-1].at - start == timedelta(hours=27, minutes=35, seconds=5)
    assert {a.result.error for a in attempts} == {"connection failed: Connection refused"}
    assert attempts[-1].state is DeliveryState.FAILED
    assert attempts[-1].next_attempt_at is None
    delivery = world.store.deliveries["whsub-one", "evt-1"]
    assert (delivery.state, delivery.attempts) == (DeliveryState.FAILED, 8)
    assert delivery.body == event()  # kept, to be sent again by hand
    assert world.queue.messages == {}  # done with: failed is an end, and listed
    assert world.queue.invocations == 8  # held between attempts, never polled for nothing


def test_the_jitter_spreads_the_retries_of_one_outage(clock, make_client, receivers):
    receiver = receivers()
    url = receiver.local_url()
    receiver.stop()
    earliest = World(clock, make_client(allow_local=True), jitter=0.0)
    latest = World(Clock(clock.now), make_client(allow_local=True), jitter=0.999)
    for world in (earliest, latest):
        world.subscribe(url)
        world.publish()
        world.run(days=0.1)
    gaps = [
        world.store.attempts_of("evt-1")[2].at - world.store.attempts_of("evt-1")[1].at
        for world in (earliest, latest)
    ]
    assert gaps[0] == timedelta(minutes=4, seconds=30)
    assert timedelta(minutes=5, seconds=29) < gaps[1] <= timedelta(minutes=5, seconds=30)


# --- disabled ------------------------------------------------------------------------------


def test_five_days_of_failed_deliveries_disable_the_subscription(world, receivers, clock):
    receiver = receivers()
    url = receiver.local_url()
    receiver.stop()
    world.subscribe(url)
    start = clock.now
    for day in range(7):  # a new event every 12 hours, for a week, to an endpoint that is down
        for half in range(2):
            world.publish(event_id=f"evt-{day}-{half}")
            world.queue.run(world.ports, until=clock.now + timedelta(hours=12))
            clock.now = start + timedelta(days=day, hours=12 * (half + 1))
    subscription = world.store.subscription("whsub-one")
    assert subscription.status is SubscriptionStatus.DISABLED
    assert subscription.failing_since == start
    assert subscription.disabled_at is not None
    assert timedelta(days=5) <= subscription.disabled_at - start < timedelta(days=5, hours=12)
    assert max(a.at for a in world.store.attempts) == subscription.disabled_at
    # Nothing is attempted after that, and what was pending is failed, not left pending.
    assert {d.state for d in world.store.deliveries.values()} == {DeliveryState.FAILED}
    assert world.queue.messages == {}


def test_a_delivery_that_succeeds_clears_the_failing_since(world, receivers, clock):
    receiver = receivers(answer=failing(2, status(503)))
    world.subscribe(receiver.local_url())
    world.publish()
    world.queue.run(world.ports, until=clock.now + timedelta(seconds=6))
    assert world.store.subscription("whsub-one").failing_since is not None
    world.run()
    assert world.store.subscription("whsub-one").failing_since is None
    assert world.store.subscription("whsub-one").status is SubscriptionStatus.ACTIVE


def test_messages_for_a_disabled_or_deleted_subscription_send_nothing(world, receivers):
    receiver = receivers()
    world.subscribe(receiver.local_url(), name="whsub-off", status=SubscriptionStatus.DISABLED)
    world.publish("whsub-off", "evt-1")
    world.publish("whsub-gone", "evt-2")
    world.run()
    assert receiver.received == []
    assert world.store.attempts == []
    assert world.queue.messages == {}


# --- nothing lost --------------------------------------------------------------------------


def test_a_crash_between_send_and_record_sends_again_and_loses_nothing(world, receivers, clock):
    receiver = receivers()
    world.subscribe(receiver.local_url())
    crashes = []

    def crash_once(attempt):
        if not crashes:
            crashes.append(attempt)
            raise Crash

    world.store.before_record = crash_once
    start = clock.now
    world.publish()
    world.run()
    assert len(crashes) == 1
    # The receiver got the same event twice (it deduplicates by webhook-id), each verifies.
    assert [r.headers["webhook-id"] for r in receiver.received] == ["evt-1", "evt-1"]
    for request in receiver.received:
        Webhook(SECRET).verify(request.body, request.headers)
    (attempt,) = world.store.attempts_of("evt-1")
    assert attempt.state is DeliveryState.DELIVERED
    assert attempt.at - start == timedelta(seconds=180)  # after the message's visibility
    assert world.queue.messages == {}


def test_two_copies_of_a_message_record_one_attempt(world, receivers):
    receiver = receivers()
    world.subscribe(receiver.local_url())
    world.publish()
    world.publish()  # SQS delivers at least once: the same request twice, in one batch
    world.run()
    assert len(receiver.received) == 2  # both sent (allowed: same webhook-id)
    assert len(world.store.attempts_of("evt-1")) == 1
    assert world.queue.messages == {}


def test_a_crash_before_any_send_sends_once_when_the_message_returns(world, receivers, clock):
    receiver = receivers(answer=failing(1, status(500)))
    world.subscribe(receiver.local_url())
    world.publish()
    world.queue.run(world.ports, until=clock.now)  # attempt 1: 500, held for 5 s

    def crash(attempt):
        raise Crash

    world.store.before_record = crash
    clock.now += timedelta(seconds=5)
    assert not world.queue.invoke(world.ports)  # attempt 2 sent, then the function died
    world.store.before_record = lambda _attempt: None
    world.run()
    attempts = world.store.attempts_of("evt-1")
    assert [a.attempt for a in attempts] == [1, 2]
    assert attempts[-1].state is DeliveryState.DELIVERED
    assert len(receiver.received) == 3


# --- one slow endpoint delays no other ---------------------------------------------------


def test_a_slow_endpoint_does_not_delay_another_subscriptions_delivery(
    clock, make_client, receivers
):
    fast_arrived = threading.Event()
    overlapped = []

    def slow_answer(_received):
        # Answers once the other delivery arrived (or after 4 s): with attempts one after
        # the other, the other could not arrive while this one waits.
        overlapped.append(fast_arrived.wait(4.0))
        return status(200)

    def fast_answer(_received):
        fast_arrived.set()
        return status(200)

    slow = receivers(answer=slow_answer)
    fast = receivers(answer=fast_answer)
    world = World(clock, make_client(seconds=8.0, allow_local=True))
    world.subscribe(slow.local_url(), name="whsub-slow")
    world.subscribe(fast.local_url(), name="whsub-fast")
    world.publish("whsub-slow", "evt-1")  # first in the batch
    world.publish("whsub-fast", "evt-1")
    world.queue.invoke(world.ports)
    assert overlapped == [True]
    assert {d.state for d in world.store.deliveries.values()} == {DeliveryState.DELIVERED}
