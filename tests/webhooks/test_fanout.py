"""Which deliveries an event makes (the relay's webhook fan-out): one per active subscription
of an org that may see it whose types take it; the body as that org sees it."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from reservations.kernel.event_log import record_position
from reservations.webhooks.models.domain import SigningSecrets, Subscription
from reservations.webhooks.rules.fanout import deliveries_for, orgs_to_notify
from tests.support import event_scenario as s

pytestmark = pytest.mark.disable_socket

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def subscription(name: str, org: str, **fields: object) -> Subscription:
    return Subscription(name, org, "https://h.example.com/", SigningSecrets("whsec_x"), NOW,
                        **fields)  # type: ignore[arg-type]  # fmt: skip


def test_the_operators_org_and_every_org_of_the_feeds_are_notified():
    stored = next(e for e in s.every_type() if e.event.type.value == "workload.terminated")
    assert orgs_to_notify(stored, "org-platform") == {
        "org-platform", "org-acme", "org-spotbuyer", "org-reclaimer",
    }  # fmt: skip
    assert "org-platform" not in orgs_to_notify(stored, None)


def test_only_active_subscriptions_whose_types_take_the_event_get_it():
    stored = next(e for e in s.every_type() if e.event.type.value == "workload.placed")
    subscriptions = {
        "org-spotbuyer": [
            subscription("whsub-all", "org-spotbuyer"),
            subscription("whsub-placed", "org-spotbuyer", types=frozenset({"workload.placed"})),
            subscription("whsub-ended", "org-spotbuyer", types=frozenset({"workload.ended"})),
            subscription("whsub-off", "org-spotbuyer").disabled(NOW),
        ],
        "org-stranger": [subscription("whsub-stranger", "org-stranger")],
    }
    made = deliveries_for(stored, subscriptions, "org-platform")
    assert [r.subscription_id for r in made] == ["whsub-all", "whsub-placed"]


def test_the_key_id_goes_to_the_operator_and_the_owner_only():
    stored = next(e for e in s.every_type() if e.event.type.value == "workload.placed")
    subscriptions = {
        org: [subscription(f"whsub-{org}", org)]
        for org in ("org-platform", "org-acme", "org-spotbuyer")
    }
    bodies = {r.org_id: json.loads(r.body) for r in deliveries_for(stored, subscriptions,
                                                                   "org-platform")}  # fmt: skip
    assert "keyId" in bodies["org-platform"]["data"]["actor"]
    assert "keyId" in bodies["org-acme"]["data"]["actor"]
    assert "keyId" not in bodies["org-spotbuyer"]["data"]["actor"]
    assert bodies["org-spotbuyer"] == stored.event.envelope(False)


def test_each_request_carries_the_event_compact_as_its_org_sees_it_orgs_in_order():
    stored = next(e for e in s.every_type() if e.event.type.value == "workload.placed")
    subscriptions = {
        "org-spotbuyer": [
            subscription("whsub-off", "org-spotbuyer").disabled(NOW),
            subscription("whsub-ended", "org-spotbuyer", types=frozenset({"workload.ended"})),
            subscription("whsub-b", "org-spotbuyer"),
        ],
        "org-acme": [subscription("whsub-a", "org-acme")],
    }
    made = deliveries_for(stored, subscriptions, None)
    assert [(r.org_id, r.subscription_id) for r in made] == [
        ("org-acme", "whsub-a"),
        ("org-spotbuyer", "whsub-b"),
    ]
    spotbuyer = made[1]
    assert (spotbuyer.event_id, spotbuyer.event_type) == (stored.id, "workload.placed")
    assert spotbuyer.body == json.dumps(stored.event.envelope(False), separators=(",", ":"))
    assert made[0].body == json.dumps(stored.event.envelope(True), separators=(",", ":"))


def test_a_subscription_gets_only_events_recorded_from_its_creation_on():
    """A relay hands an event over again (at least once): a subscription made since the
    event was recorded must not get it."""
    placed = next(e for e in s.every_type() if e.event.type.value == "workload.placed")
    recorded = datetime(2026, 12, 1, 12, 0, 0, 500_000, tzinfo=UTC)
    stored = replace(placed, position=record_position(recorded, placed.id))
    ms = timedelta(milliseconds=1)
    subscriptions = {
        "org-spotbuyer": [
            Subscription(name, "org-spotbuyer", "https://h.example.com/",
                         SigningSecrets("whsec_x"), created)
            for name, created in (("whsub-before", recorded - ms), ("whsub-same", recorded),
                                  ("whsub-after", recorded + ms))
        ]
    }  # fmt: skip
    made = deliveries_for(stored, subscriptions, None)
    assert [r.subscription_id for r in made] == ["whsub-before", "whsub-same"]
