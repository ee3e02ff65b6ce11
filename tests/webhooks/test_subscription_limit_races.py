"""Subscribes racing for an org's last places, against the local emulator: each in its own
process, all deciding from the same read of the org's counter (8 of 10 taken). The counter's
condition lets one commit per count; the others re-read and either win the next place or
are refused with 409 subscription_limit. Never 11."""

from __future__ import annotations

from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import webhook_event
from reservations import endpoints
from reservations.kernel.times import parse_time
from reservations.webhooks.models.api import SubscriptionCreate
from reservations.webhooks.models.domain import (
    MAX_SUBSCRIPTIONS_PER_ORG,
    SigningSecrets,
    Subscription,
)
from reservations.webhooks.table.subscriptions import SubscriptionTable
from tests.support import state
from tests.support.forks import barrier_after_first_read, concurrently

pytestmark = pytest.mark.races

ORG = "org-racehooks"
KEY = "vl_local_test_racehooks"
RACERS = 6
TAKEN = MAX_SUBSCRIPTIONS_PER_ORG - 2


def _stored(db: Any) -> list[dict[str, Any]]:
    return [i for i in state.whole_table(db) if i["PK"] == f"ORGHOOK#{ORG}"]


def test_concurrent_subscribes_for_the_last_two_places_make_exactly_ten(
    emulated, load_emulated_fleet
):
    keys = [{"key": KEY, "orgId": ORG, "permissions": ["events.read"]}]
    load_emulated_fleet(f.fleet([], extra_keys=keys))
    table = SubscriptionTable()
    for n in range(TAKEN):
        made = Subscription(f"whsub-taken{n:015d}", ORG, "https://hooks.example.com/x",
                            SigningSecrets("whsec_x"), parse_time("2026-12-01T00:00:00Z"))  # fmt: skip
        table.commit(SubscriptionCreate(f"seed-{n}", made, n))
    body = {"url": "https://hooks.example.com/race"}
    calls = [
        ("create_webhook", webhook_event(endpoints.CREATE_WEBHOOK, f"Bearer {KEY}", body=body))
        for _ in range(RACERS)
    ]
    hook = barrier_after_first_read(RACERS)
    results = concurrently(calls, hook)
    statuses = sorted(r.status for r in results)
    stored = _stored(emulated["dynamodb"])
    subscriptions = [i for i in stored if i["SK"].startswith("WH#")]
    counter = next(i for i in stored if i["SK"] == "COUNT")
    print(f"\nsubscribe race: statuses={statuses} reads={hook.reads.value}")
    assert statuses == [201, 201] + [409] * (RACERS - 2)
    assert {r.body["code"] for r in results if r.status == 409} == {"subscription_limit"}
    assert len(subscriptions) == MAX_SUBSCRIPTIONS_PER_ORG
    assert int(counter["count"]) == MAX_SUBSCRIPTIONS_PER_ORG
