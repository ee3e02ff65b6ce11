"""Schemathesis against the webhook subscription operations, in-process over moto: no 5xx,
only documented statuses and shapes, each error code the contract's for its status; no
answer shows another org's subscription, and only a subscribe's and a rotation's show a
secret; one delivery is shown only to its subscription's org, never with its body."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from devstack import fleet_documents as f
from reservations.kernel.settings import settings
from reservations.webhooks import endpoints as webhooks
from reservations.webhooks.models.api import SubscriptionCreate
from reservations.webhooks.models.domain import (
    AttemptResult,
    DeliveryRequest,
    SigningSecrets,
    Subscription,
)
from reservations.webhooks.rules.attempts import after_attempt
from reservations.webhooks.table.deliveries import DeliveryTable
from reservations.webhooks.table.subscriptions import SubscriptionTable
from tests.support.fuzzing import (
    FUZZED,
    api_schema,
    call_and_check,
    chooser,
    fleet_world,
    tally,
    with_key,
)

pytestmark = pytest.mark.fuzz

CODES = {
    400: {"invalid_request"},
    401: {"unauthorized"},
    404: {"not_found"},
    # conflict: a write's race; the other two: a retry of a delivery not failed, or of a
    # disabled subscription's
    409: {"subscription_limit", "conflict", "delivery_not_failed", "subscription_disabled"},
    415: {"unsupported_media_type"},
    422: {"idempotency_key_reused"},
}
KEYS = {
    "Bearer vl_local_test_hooks_a": "org-hooks-a",
    "Bearer vl_local_test_hooks_b": "org-hooks-b",
    "Bearer vl_local_test_hooks_none": "org-hooks-a",  # no events.read
}
AUTHORIZATIONS = [*KEYS, "Bearer vl_local_test_hooks_a", "Bearer vl_unknown_key", None]
URLS = ["https://hooks.example.com/in", "https://a.example.org:8443/x?y=1", "https://10.0.0.1/"]
STATUSES: Counter[str] = Counter()
# Subscription id -> its org, as the subscribes answered.
MADE: dict[str, str] = {}
schema = api_schema(webhooks.ENDPOINTS)  # every webhook endpoint, a new one included


@pytest.fixture(scope="module")
def world() -> Iterator[None]:
    keys = [
        {"key": key.removeprefix("Bearer "), "orgId": org,
         "permissions": [] if key.endswith("none") else ["events.read"]}
        for key, org in KEYS.items()
    ]  # fmt: skip
    saved = os.environ.get("CURSOR_SIGNING_KEY")
    os.environ["CURSOR_SIGNING_KEY"] = "fuzz-only-cursor-signing-key-32-characters"
    settings.cache_clear()
    with fleet_world(f.fleet([], extra_keys=keys)):
        _seed_delivery()
        yield
    if saved is None:
        os.environ.pop("CURSOR_SIGNING_KEY", None)
    settings.cache_clear()


# org-hooks-a's subscription with one delivery of two attempts (the only event delivered),
# aimed at by the delivery operations only (so no delete removes it)
SEEDED, SEEDED_EVENT = "whsub-fuzzseed0000000000", "evt-fuzzseed"
SEEDED_BODY = '{"id":"evt-fuzzseed","secretish":"body-only-sent-to-the-receiver"}'


def _seed_delivery() -> None:
    at = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    made = Subscription(SEEDED, "org-hooks-a", URLS[0], SigningSecrets("whsec_" + "A" * 44), at)
    SubscriptionTable().commit(SubscriptionCreate("w-seed", made, 0))
    request = DeliveryRequest(subscriptionId=SEEDED, orgId="org-hooks-a", eventId=SEEDED_EVENT,
                              eventType="workload.terminated", body=SEEDED_BODY)  # fmt: skip
    before = None
    for number in (1, 2):
        result = AttemptResult(status=500)
        after, record = after_attempt(before, request, number, result, at, 0.5)
        DeliveryTable().record_attempt(before, after, record)
        before = after


def _aim(case: Any) -> None:
    """Subscribable URLs and known subscription ids most of the time, a mix of keys."""
    choose = chooser(case)
    if isinstance(case.body, dict) and choose.random() < 0.7:
        case.body["url"] = choose.choice(URLS)
        if choose.random() < 0.5:
            case.body.pop("types", None)
    if case.path_parameters and MADE and choose.random() < 0.7:
        case.path_parameters["subscriptionId"] = choose.choice(sorted(MADE))
    if case.path_parameters and "eventId" in case.path_parameters and choose.random() < 0.7:
        case.path_parameters.update(subscriptionId=SEEDED, eventId=SEEDED_EVENT)
    with_key(case, choose.choice(AUTHORIZATIONS))


@schema.parametrize()
@FUZZED
def test_the_webhook_operations_never_break_the_contract_nor_leak(case, world):
    _aim(case)
    response = call_and_check(case, CODES)
    if response is None:
        STATUSES["no route (API Gateway)"] += 1
        return
    operation = case.operation
    name = operation.definition.raw["operationId"]
    STATUSES[f"{operation.method.upper()} {operation.path} {response.status_code}"] += 1
    caller_org = KEYS.get(case.headers.get("Authorization", ""))
    body = response.json() if response.text else {}
    if name == "createWebhook" and response.status_code == 201:
        MADE[body["id"]] = caller_org or ""
    if response.status_code < 300 and name in ("getWebhook", "listWebhooks"):
        shown = body.get("items", [body])
        assert all(MADE.get(item["id"], caller_org) == caller_org for item in shown)
        assert "whsec_" not in response.text
    if response.status_code < 300 and name == "getWebhookDelivery":
        assert {**MADE, SEEDED: "org-hooks-a"}[body["subscriptionId"]] == caller_org
        assert "secretish" not in response.text  # the event's body is not shown


def test_webhook_fuzz_counts_are_printed():
    """Runs last in this module: the tally of statuses seen."""
    seen = tally("webhook fuzz", STATUSES)
    assert {"POST /v1/webhooks 201", "GET /v1/webhooks 200"} <= seen
    assert "GET /v1/webhooks/{subscriptionId}/deliveries/{eventId} 200" in seen
