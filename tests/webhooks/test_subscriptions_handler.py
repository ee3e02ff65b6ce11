"""The webhook subscription endpoints in-process over moto: subscribe, list, get, delete and
rotate a secret, each through its own function, over the tables of template.yaml."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import webhook_event
from devstack.functions import invoke, load_function
from reservations import endpoints
from reservations.kernel.http import resolver
from reservations.kernel.settings import settings
from reservations.webhooks.models.domain import MAX_SUBSCRIPTIONS_PER_ORG, is_secret
from reservations.webhooks.table.subscriptions import SubscriptionTable
from tests.support.ports import swap_ports

pytestmark = pytest.mark.moto

URL = "https://hooks.example.com/reservations"
HOOK_KEYS = {
    "buyer": ("vl_local_test_buyer", "org-spotbuyer"),
    "buyer2": ("vl_local_test_buyer2", "org-spotbuyer"),
    "other": ("vl_local_test_other", "org-other"),
    "unpermitted": ("vl_local_test_unpermitted", "org-spotbuyer"),
}
NAMES = {
    endpoints.CREATE_WEBHOOK: "create_webhook",
    endpoints.LIST_WEBHOOKS: "list_webhooks",
    endpoints.GET_WEBHOOK: "get_webhook",
    endpoints.DELETE_WEBHOOK: "delete_webhook",
    endpoints.ROTATE_WEBHOOK_SECRET: "rotate_webhook_secret",
}


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    return {name: load_function(name) for name in NAMES.values()}


@pytest.fixture
def orgs(aws: Any, load_fleet: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("CURSOR_SIGNING_KEY", "test-only-cursor-signing-key-32-chars-long")
    settings.cache_clear()
    keys = [
        {"key": key, "orgId": org, "permissions": [] if kind == "unpermitted" else ["events.read"]}
        for kind, (key, org) in HOOK_KEYS.items()
    ]
    load_fleet(f.fleet([], extra_keys=keys))
    return aws


def call(functions, route, kind: str, subscription_id: str | None = None, **extra: Any) -> Any:
    authorization = f"Bearer {HOOK_KEYS[kind][0]}" if kind in HOOK_KEYS else None
    event = webhook_event(route, authorization, subscription_id, **extra)
    return invoke(functions[NAMES[route]], event)


def without_request_id(answer: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """The answer's body and headers but the request id (which each request has its own)."""
    body = {k: v for k, v in answer.body.items() if k != "requestId"}
    return body, {k: v for k, v in answer.headers.items() if k != "x-request-id"}


def subscribe(functions, kind: str = "buyer", **body: Any) -> Any:
    return call(functions, endpoints.CREATE_WEBHOOK, kind, body={"url": URL, **body})


def test_a_subscription_is_made_with_a_secret_shown_once_and_listed_without_it(functions, orgs):
    made = subscribe(functions, types=["workload.termination_requested"], description="spot")
    assert made.status == 201
    view = made.body
    assert view["id"].startswith("whsub-")
    assert made.headers["location"] == f"/v1/webhooks/{view['id']}"
    assert is_secret(view["secret"])
    assert view["status"] == "active"
    assert view["types"] == ["workload.termination_requested"]
    got = call(functions, endpoints.GET_WEBHOOK, "buyer", view["id"])
    assert got.status == 200
    assert got.body == {k: v for k, v in view.items() if k != "secret"}
    listed = call(functions, endpoints.LIST_WEBHOOKS, "buyer2")
    assert listed.status == 200
    assert listed.body == {"items": [got.body]}
    assert view["secret"] not in got.body_text + listed.body_text


def test_the_eleventh_subscription_of_an_org_is_refused_and_a_delete_makes_room(functions, orgs):
    made = [subscribe(functions).body["id"] for _ in range(MAX_SUBSCRIPTIONS_PER_ORG)]
    refused = subscribe(functions, "buyer2")
    assert refused.status == 409
    assert refused.body["code"] == "subscription_limit"
    assert subscribe(functions, "other").status == 201  # another org's limit is its own
    assert call(functions, endpoints.DELETE_WEBHOOK, "buyer", made[3]).status == 204
    assert subscribe(functions).status == 201
    assert subscribe(functions).status == 409


def test_a_page_of_subscriptions_ends_with_a_cursor_to_the_next(functions, orgs):
    made = sorted(subscribe(functions).body["id"] for _ in range(3))
    first = call(functions, endpoints.LIST_WEBHOOKS, "buyer", query={"limit": "2"})
    assert [s["id"] for s in first.body["items"]] == made[:2]
    cursor = first.body["nextCursor"]
    second = call(
        functions, endpoints.LIST_WEBHOOKS, "buyer", query={"limit": "2", "cursor": cursor}
    )
    assert [s["id"] for s in second.body["items"]] == made[2:]
    assert "nextCursor" not in second.body
    # Another org's cursor is no cursor of this list.
    foreign = call(functions, endpoints.LIST_WEBHOOKS, "other", query={"cursor": cursor})
    assert foreign.status == 400
    assert foreign.body["details"][0]["field"] == "cursor"


def test_another_orgs_subscription_is_the_one_404_for_every_route(functions, orgs):
    mine = subscribe(functions).body["id"]
    unknown = call(functions, endpoints.GET_WEBHOOK, "buyer", "whsub-00000000000000000000")
    for route in (endpoints.GET_WEBHOOK, endpoints.DELETE_WEBHOOK, endpoints.ROTATE_WEBHOOK_SECRET):
        answer = call(functions, route, "other", mine)
        assert answer.status == 404
        assert without_request_id(answer) == without_request_id(unknown)
    assert call(functions, endpoints.LIST_WEBHOOKS, "other").body == {"items": []}
    assert call(functions, endpoints.GET_WEBHOOK, "buyer", mine).status == 200


@pytest.mark.parametrize("route", list(NAMES))
def test_a_key_without_events_read_gets_the_404_and_no_key_the_401(functions, orgs, route):
    ids = None if route in (endpoints.CREATE_WEBHOOK, endpoints.LIST_WEBHOOKS) else "whsub-x1"
    body = {"url": URL} if route is endpoints.CREATE_WEBHOOK else None
    assert call(functions, route, "unpermitted", ids, body=body).status == 404
    assert call(functions, route, "nobody", ids, body=body).status == 401


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "https://10.0.0.7/hook"}, "url"),
        ({"url": "http://hooks.example.com/x"}, "url"),
        ({"url": "https://localhost/x"}, "url"),
        ({"url": "http://127.0.0.1:8765/"}, "url"),  # the local allowance is off
        ({"url": URL, "types": ["workload.placed", "no.such"]}, "types[1]"),
        ({"url": URL, "types": ["workload.placed", "workload.placed"]}, "types[1]"),
        ({"url": URL, "types": []}, "types"),
        ({"url": URL, "secret": "whsec_mine"}, "secret"),
        ({"types": ["workload.placed"]}, "url"),
    ],
)
def test_a_body_that_cannot_be_subscribed_is_a_400_naming_the_field(functions, orgs, body, field):
    answer = call(functions, endpoints.CREATE_WEBHOOK, "buyer", body=body)
    assert answer.status == 400
    assert [d["field"] for d in answer.body["details"]] == [field]


def test_the_stacks_local_allowance_lets_a_local_receiver_be_subscribed(
    functions, orgs, monkeypatch
):
    monkeypatch.setenv("WEBHOOK_ALLOW_LOCAL_RECEIVER", "true")
    settings.cache_clear()
    try:
        body = {"url": "http://127.0.0.1:8765/"}
        answer = call(functions, endpoints.CREATE_WEBHOOK, "buyer", body=body)
    finally:
        monkeypatch.delenv("WEBHOOK_ALLOW_LOCAL_RECEIVER")
        settings.cache_clear()
    assert answer.status == 201, answer.body


def test_a_repeated_subscribe_with_its_key_is_the_same_answer_and_one_subscription(functions, orgs):
    body = {"url": URL}
    first = call(functions, endpoints.CREATE_WEBHOOK, "buyer", body=body, idempotency_key="k-1")
    again = call(functions, endpoints.CREATE_WEBHOOK, "buyer", body=body, idempotency_key="k-1")
    assert (again.status, again.body_text) == (first.status, first.body_text)
    assert len(call(functions, endpoints.LIST_WEBHOOKS, "buyer").body["items"]) == 1
    other = call(functions, endpoints.CREATE_WEBHOOK, "buyer", body={"url": URL + "/2"},
                 idempotency_key="k-1")  # fmt: skip
    assert (other.status, other.body["code"]) == (422, "idempotency_key_reused")


def test_a_deleted_subscription_is_gone(functions, orgs):
    made = subscribe(functions).body["id"]
    assert call(functions, endpoints.DELETE_WEBHOOK, "buyer", made).status == 204
    assert call(functions, endpoints.GET_WEBHOOK, "buyer", made).status == 404
    assert call(functions, endpoints.DELETE_WEBHOOK, "buyer", made).status == 404


def test_a_rotation_shows_the_new_secret_and_both_sign_for_a_day(functions, orgs):
    made = subscribe(functions).body
    rotated = call(functions, endpoints.ROTATE_WEBHOOK_SECRET, "buyer", made["id"])
    assert rotated.status == 200
    new = rotated.body["secret"]
    assert is_secret(new)
    assert new != made["secret"]
    stored = SubscriptionTable().load_subscription("org-spotbuyer", made["id"])
    assert stored is not None
    assert stored.secrets.current == new
    assert stored.secrets.previous == made["secret"]
    assert stored.secrets.previous_expires_at is not None
    got = call(functions, endpoints.GET_WEBHOOK, "buyer", made["id"])
    assert new not in got.body_text
    assert made["secret"] not in got.body_text


# --- what each call costs (requests at botocore's endpoint, the key cached) -------------------

QUERY, TRANSACT, GET = (
    ("dynamodb", "Query"),
    ("dynamodb", "TransactWriteItems"),
    ("dynamodb", "GetItem"),
)


@pytest.fixture
def warm(functions, orgs) -> str:
    """One subscription of the buyer's org, the key cached; its id."""
    return subscribe(functions).body["id"]


@pytest.mark.parametrize("key", [None, "budget-key"])
def test_a_subscribe_a_delete_and_a_rotation_are_a_query_and_a_transaction(
    functions, warm, sent_requests, key
):
    sent_requests.clear()
    made = call(
        functions, endpoints.CREATE_WEBHOOK, "buyer", body={"url": URL}, idempotency_key=key
    )
    assert made.status == 201
    assert sent_requests.sent == [QUERY, TRANSACT]
    sent_requests.clear()
    key = key and key + "-2"
    rotate = call(functions, endpoints.ROTATE_WEBHOOK_SECRET, "buyer", warm, idempotency_key=key)
    assert rotate.status == 200
    assert sent_requests.sent == [QUERY, TRANSACT]
    sent_requests.clear()
    key = key and key + "-3"
    gone = call(functions, endpoints.DELETE_WEBHOOK, "buyer", warm, idempotency_key=key)
    assert gone.status == 204
    assert sent_requests.sent == [QUERY, TRANSACT]


def test_a_refused_subscribe_and_the_reads_are_one_request(functions, warm, sent_requests):
    for _ in range(MAX_SUBSCRIPTIONS_PER_ORG - 1):
        subscribe(functions)
    sent_requests.clear()
    assert subscribe(functions).status == 409
    assert sent_requests.sent == [QUERY]
    sent_requests.clear()
    assert call(functions, endpoints.LIST_WEBHOOKS, "buyer").status == 200
    assert sent_requests.sent == [QUERY]
    sent_requests.clear()
    assert call(functions, endpoints.GET_WEBHOOK, "buyer", warm).status == 200
    assert sent_requests.sent == [GET]


def test_a_caller_without_the_permission_costs_no_request(functions, warm, sent_requests):
    call(functions, endpoints.GET_WEBHOOK, "unpermitted", warm)  # its key cached
    sent_requests.clear()
    for route in NAMES:
        call(functions, route, "unpermitted", warm, body={"url": URL})
    assert sent_requests.sent == []


# --- a keyed subscribe and rotation, replayed within the key's 24 hours -----------------------


@pytest.fixture
def hook_clock(functions, monkeypatch: pytest.MonkeyPatch) -> list[datetime]:
    """Every webhook function's clock (and the key check's) reads the list's one time."""
    now = [datetime.now(UTC).replace(microsecond=0)]
    for module in functions.values():
        swap_ports(monkeypatch, module, clock=lambda: now[0])
    monkeypatch.setattr(resolver, "utc_now", lambda: now[0])
    return now


def test_a_keyed_rotation_replays_its_answer_byte_for_byte_and_rotates_once(
    functions, orgs, hook_clock
):
    made = subscribe(functions).body
    first = call(functions, endpoints.ROTATE_WEBHOOK_SECRET, "buyer", made["id"],
                 idempotency_key="rot-1")  # fmt: skip
    assert first.status == 200
    stored = SubscriptionTable().load_subscription("org-spotbuyer", made["id"])
    assert stored is not None
    for later, body in ((timedelta(0), None), (timedelta(hours=23, minutes=59), {})):
        hook_clock[0] += later
        again = call(functions, endpoints.ROTATE_WEBHOOK_SECRET, "buyer", made["id"], body=body,
                     idempotency_key="rot-1")  # fmt: skip
        assert (again.status, again.body_text) == (first.status, first.body_text)
        assert again.headers["idempotent-replayed"] == "true"
        # No third secret: the stored secrets are the first rotation's.
        assert SubscriptionTable().load_subscription("org-spotbuyer", made["id"]) == stored
    other = subscribe(functions).body["id"]
    reused = call(functions, endpoints.ROTATE_WEBHOOK_SECRET, "buyer", other,
                  idempotency_key="rot-1")  # fmt: skip
    assert (reused.status, reused.body["code"]) == (422, "idempotency_key_reused")
    untouched = SubscriptionTable().load_subscription("org-spotbuyer", other)
    assert untouched is not None
    assert untouched.secrets.previous is None
    # Once the key's 24 hours are over, the same key acts again: a new secret.
    hook_clock[0] += timedelta(minutes=2)
    fresh = call(functions, endpoints.ROTATE_WEBHOOK_SECRET, "buyer", made["id"],
                 idempotency_key="rot-1")  # fmt: skip
    assert fresh.status == 200
    assert fresh.body["secret"] not in (first.body["secret"], made["secret"])


def test_a_keyed_subscribe_replayed_within_a_day_makes_one_subscription_and_one_secret(
    functions, orgs, hook_clock
):
    body = {"url": URL, "types": ["reservation.created"], "description": "billing"}
    first = call(functions, endpoints.CREATE_WEBHOOK, "buyer", body=body, idempotency_key="sub-1")
    assert first.status == 201
    reordered = {"description": "billing", "types": ["reservation.created"], "url": URL}
    for later in (timedelta(hours=1), timedelta(hours=22, minutes=58)):
        hook_clock[0] += later
        again = call(functions, endpoints.CREATE_WEBHOOK, "buyer", body=reordered,
                     idempotency_key="sub-1")  # fmt: skip
        assert (again.status, again.body_text) == (first.status, first.body_text)
        assert again.headers["location"] == first.headers["location"]
        assert again.headers["idempotent-replayed"] == "true"
    listed = call(functions, endpoints.LIST_WEBHOOKS, "buyer").body["items"]
    assert [item["id"] for item in listed] == [first.body["id"]]
    stored = SubscriptionTable().load_subscription("org-spotbuyer", first.body["id"])
    assert stored is not None
    assert stored.secrets.current == first.body["secret"]
    for changed in ({**body, "description": "other"}, {"url": URL}):
        reused = call(functions, endpoints.CREATE_WEBHOOK, "buyer", body=changed,
                      idempotency_key="sub-1")  # fmt: skip
        assert (reused.status, reused.body["code"]) == (422, "idempotency_key_reused")
    # Another API key of the same org never shares the answer: it subscribes anew.
    own = call(functions, endpoints.CREATE_WEBHOOK, "buyer2", body=body, idempotency_key="sub-1")
    assert own.status == 201
    assert own.body["id"] != first.body["id"]
    assert len(call(functions, endpoints.LIST_WEBHOOKS, "buyer").body["items"]) == 2
