"""Subscribe, delete and rotate over the fakes, through the one write pipeline: the limit of
10 held by the counter's condition when a concurrent subscribe commits between the read and
the write, what a key replays, and that no answer but a subscribe's and a rotation's, and
no log line, shows a secret."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from typing import Any

import pytest

from reservations import endpoints
from reservations.kernel.bodies import RawBody
from reservations.kernel.caller import Caller
from reservations.kernel.errors import Conflict, NotFound
from reservations.kernel.pipeline import run_write
from reservations.kernel.retries import MAX_ATTEMPTS
from reservations.kernel.writes import WriteConflict
from reservations.webhooks.errors import SubscriptionLimit
from reservations.webhooks.models.api import HookWrite, SubscriptionCreate
from reservations.webhooks.models.domain import (
    MAX_SUBSCRIPTIONS_PER_ORG,
    ROTATION_OVERLAP,
    SigningSecrets,
    Subscription,
)
from reservations.webhooks.subscriptions import (
    ROTATE_SECRET,
    UNSUBSCRIBE,
    get_subscription,
    list_subscriptions,
    subscribe_spec,
)
from tests.support.fakes import FakeClock, FakeTable, ports
from tests.support.hook_fakes import FakeSubscriptionStore
from tests.support.use_cases import NOW

pytestmark = pytest.mark.disable_socket

READS = frozenset({"events.read"})
BUYER = Caller("key-buyer", "org-buyer", READS, key_hash="hash-buyer")
BUYER2 = Caller("key-buyer2", "org-buyer", READS, key_hash="hash-buyer2")
OTHER = Caller("key-other", "org-other", READS, key_hash="hash-other")
NO_EVENTS = Caller("key-ro", "org-buyer", frozenset({"reservation.read"}), key_hash="hash-ro")
URL = "https://hooks.example.com/in"
KEY = b"k" * 32


class World:
    def __init__(self) -> None:
        self.clock = FakeClock(NOW)
        self.table = FakeTable(self.clock)
        self.secrets = iter(f"whsec_{n:044d}" for n in range(1000))
        ids = iter(f"whsub-{n:020d}" for n in range(1000))
        self.ports = ports(
            self.table, self.clock, new_id=lambda: next(ids), new_secret=lambda: next(self.secrets)
        )

    @property
    def hooks(self) -> FakeSubscriptionStore:
        hooks = self.ports.webhooks
        assert isinstance(hooks, FakeSubscriptionStore)
        return hooks

    def subscribe(self, caller: Caller = BUYER, key: str | None = None, **body: Any) -> Any:
        raw = RawBody(json.dumps({"url": URL, **body}))
        spec = subscribe_spec(lambda: False)
        return run_write(spec, endpoints.CREATE_WEBHOOK.at(), caller, raw, key, self.ports)

    def unsubscribe(self, subscription_id: str, caller: Caller = BUYER) -> Any:
        route = endpoints.DELETE_WEBHOOK.at(subscriptionId=subscription_id)
        return run_write(UNSUBSCRIBE, route, caller, RawBody(None), None, self.ports)

    def rotate(self, subscription_id: str, caller: Caller = BUYER, key: str | None = None) -> Any:
        route = endpoints.ROTATE_WEBHOOK_SECRET.at(subscriptionId=subscription_id)
        return run_write(ROTATE_SECRET, route, caller, RawBody(None), key, self.ports)


@pytest.fixture
def world() -> World:
    return World()


def test_a_subscribe_makes_the_subscription_and_counts_it(world):
    answer = world.subscribe(types=["workload.placed"], description="placements")
    assert answer.status == 201
    body = json.loads(answer.body)
    assert body["secret"] == "whsec_" + "0" * 44
    assert dict(answer.headers) == {"Location": f"/v1/webhooks/{body['id']}"}
    stored = world.hooks.load_subscription("org-buyer", body["id"])
    assert stored is not None
    assert stored.types == frozenset({"workload.placed"})
    assert stored.description == "placements"
    assert stored.created_at == NOW
    assert world.hooks.counts == {"org-buyer": 1}


def test_the_eleventh_is_refused_and_nothing_is_written(world):
    for _ in range(MAX_SUBSCRIPTIONS_PER_ORG):
        world.subscribe()
    writes = world.hooks.writes
    with pytest.raises(SubscriptionLimit):
        world.subscribe(BUYER2)
    assert world.hooks.writes == writes
    assert world.hooks.counts["org-buyer"] == MAX_SUBSCRIPTIONS_PER_ORG


def test_a_subscribe_that_loses_the_tenth_place_to_a_concurrent_one_is_refused(world):
    """Nine stored; between this subscribe's read and its write another one commits the
    tenth. The counter's condition fails the write; the retry reads 10 and refuses."""
    for _ in range(MAX_SUBSCRIPTIONS_PER_ORG - 1):
        world.subscribe()
    rival = Subscription("whsub-rival0000000000000", "org-buyer", URL, SigningSecrets("s"), NOW)

    def rival_commits_first(write: HookWrite) -> None:
        world.hooks.before_commit = lambda _write: None
        world.hooks.commit(SubscriptionCreate("w-rival", rival, write.count))

    world.hooks.before_commit = rival_commits_first
    with pytest.raises(SubscriptionLimit):
        world.subscribe()
    assert world.hooks.counts["org-buyer"] == MAX_SUBSCRIPTIONS_PER_ORG
    assert len(world.hooks.load_hooks("org-buyer").subscriptions) == MAX_SUBSCRIPTIONS_PER_ORG


def test_a_subscribe_that_always_loses_is_the_409_conflict_and_writes_nothing(world):
    tries: list[HookWrite] = []

    def someone_else_always_wrote_first(write: HookWrite) -> None:
        tries.append(write)
        raise WriteConflict("ConditionalCheckFailed")

    world.hooks.before_commit = someone_else_always_wrote_first
    with pytest.raises(Conflict):
        world.subscribe()
    assert len(tries) == MAX_ATTEMPTS
    assert world.hooks.subscriptions == {}


def test_a_delete_frees_a_place_and_another_orgs_id_is_not_found(world):
    made = json.loads(world.subscribe().body)["id"]
    with pytest.raises(NotFound):
        world.unsubscribe(made, OTHER)
    deleted = world.unsubscribe(made)
    assert (deleted.status, deleted.body) == (204, "")
    assert world.hooks.counts["org-buyer"] == 0
    with pytest.raises(NotFound):
        world.unsubscribe(made)


def test_a_rotation_keeps_the_old_secret_signing_for_a_day(world):
    made = json.loads(world.subscribe().body)
    answer = world.rotate(made["id"])
    assert answer.status == 200
    new = json.loads(answer.body)["secret"]
    stored = world.hooks.load_subscription("org-buyer", made["id"])
    assert stored is not None
    assert stored.secrets == SigningSecrets(new, made["secret"], NOW + ROTATION_OVERLAP)
    assert stored.secrets.in_force(NOW + ROTATION_OVERLAP / 2) == (new, made["secret"])
    with pytest.raises(NotFound):
        world.rotate(made["id"], OTHER)


def test_a_rotation_keeps_the_health_the_sender_wrote_meanwhile(world):
    made = json.loads(world.subscribe().body)["id"]
    key = ("org-buyer", made)
    world.hooks.subscriptions[key] = replace(world.hooks.subscriptions[key], failing_since=NOW)
    world.rotate(made)
    assert world.hooks.subscriptions[key].failing_since == NOW


def test_a_keyed_subscribe_repeated_replays_its_answer_and_makes_one(world):
    first = world.subscribe(key="k1")
    again = world.subscribe(key="k1")
    assert (again.status, again.body) == (first.status, first.body)
    assert again.headers == (*first.headers, ("Idempotent-Replayed", "true"))
    assert world.hooks.counts["org-buyer"] == 1


def test_the_limit_refusal_is_not_kept_so_the_same_key_acts_once_there_is_room(world):
    made = [json.loads(world.subscribe().body)["id"] for _ in range(MAX_SUBSCRIPTIONS_PER_ORG)]
    with pytest.raises(SubscriptionLimit):
        world.subscribe(key="k2")
    world.unsubscribe(made[0])
    assert world.subscribe(key="k2").status == 201


def test_without_events_read_every_call_is_the_404_before_the_body(world):
    with pytest.raises(NotFound):
        run_write(subscribe_spec(lambda: False), endpoints.CREATE_WEBHOOK.at(), NO_EVENTS,
                  RawBody("not json"), None, world.ports)  # fmt: skip
    with pytest.raises(NotFound):
        get_subscription(NO_EVENTS, "whsub-x", world.hooks)
    with pytest.raises(NotFound):
        list_subscriptions(NO_EVENTS, None, None, world.hooks, KEY)


def test_reads_show_no_secret_and_only_the_callers_org(world):
    made = json.loads(world.subscribe().body)
    world.subscribe(OTHER)
    view = get_subscription(BUYER2, made["id"], world.hooks)
    assert made["secret"] not in view.model_dump_json()
    page = list_subscriptions(BUYER2, None, None, world.hooks, KEY)
    assert [s.id for s in page.items] == [made["id"]]
    with pytest.raises(NotFound):
        get_subscription(OTHER, made["id"], world.hooks)


def test_no_log_line_shows_a_secret(world, caplog):
    caplog.set_level(logging.DEBUG)
    made = json.loads(world.subscribe(key="k3").body)
    world.subscribe(key="k3")
    rotated = json.loads(world.rotate(made["id"]).body)
    logged = caplog.text + "".join(str(r.__dict__) for r in caplog.records)
    assert made["secret"] not in logged
    assert rotated["secret"] not in logged
