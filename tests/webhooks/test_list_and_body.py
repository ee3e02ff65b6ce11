"""``/v1/webhooks``' list (its pages, ``limit`` and ``cursor``), the subscribe body's 400s
(each problem named by its field, all of them in the message), and each write's commit
line and metric."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import timedelta

import pytest
from aws_lambda_powertools.metrics import MetricUnit

from reservations import endpoints
from reservations.kernel import pipeline
from reservations.kernel.bodies import RawBody
from reservations.kernel.caller import Caller
from reservations.kernel.cursors import Cursor, CursorScope, encode_cursor
from reservations.kernel.errors import FieldProblem, InvalidRequest, NotFound
from reservations.kernel.pipeline import run_write
from reservations.webhooks.models.api import OrgHooks
from reservations.webhooks.models.domain import SigningSecrets, Subscription
from reservations.webhooks.subscriptions import (
    ROTATE_SECRET,
    UNSUBSCRIBE,
    list_subscriptions,
    subscribe_parser,
    subscribe_spec,
)
from tests.support.fakes import FakeClock, FakeTable, ports
from tests.support.use_cases import NOW

pytestmark = pytest.mark.disable_socket

CALLER = Caller("key-buyer", "org-buyer", frozenset({"events.read"}), key_hash="hash-buyer")
KEY = b"k" * 32
URL = "https://hooks.example.com/in"


def subscription(subscription_id: str) -> Subscription:
    return Subscription(
        id=subscription_id, org_id="org-buyer", url=URL,
        secrets=SigningSecrets("whsec_" + "A" * 44), created_at=NOW - timedelta(days=1),
    )  # fmt: skip


@dataclass
class Hooks:
    """The org's subscriptions as the store happens to return them: not sorted."""

    ids: tuple[str, ...]

    def load_hooks(self, org_id: str) -> OrgHooks:
        assert org_id == "org-buyer"
        return OrgHooks(org_id, tuple(subscription(i) for i in self.ids), len(self.ids))


def listed(limit: str | None, cursor: str | None, store: Hooks) -> tuple[list[str], str | None]:
    page = list_subscriptions(CALLER, limit, cursor, store, KEY)  # type: ignore[arg-type]
    return [item.id for item in page.items], page.next_cursor


def test_the_list_pages_through_the_orgs_subscriptions_by_id_each_once():
    store = Hooks(("whsub-c", "whsub-a", "whsub-e", "whsub-b", "whsub-d"))
    first, cursor = listed("2", None, store)
    assert first == ["whsub-a", "whsub-b"]
    assert cursor is not None
    second, cursor = listed("2", cursor, store)
    assert second == ["whsub-c", "whsub-d"]
    third, cursor = listed("2", cursor, store)
    assert (third, cursor) == (["whsub-e"], None)


def test_a_page_that_holds_the_rest_exactly_has_no_cursor_and_the_default_is_fifty():
    store = Hooks(("whsub-b", "whsub-a", "whsub-c"))
    assert listed("3", None, store) == (["whsub-a", "whsub-b", "whsub-c"], None)
    assert listed(None, None, store) == (["whsub-a", "whsub-b", "whsub-c"], None)
    assert listed("", None, store) == (["whsub-a", "whsub-b", "whsub-c"], None)
    assert listed("", "", store) == (["whsub-a", "whsub-b", "whsub-c"], None)
    many = Hooks(tuple(f"whsub-{n:03d}" for n in range(120)))
    assert len(listed(None, None, many)[0]) == 50
    assert len(listed("100", None, many)[0]) == 100
    assert listed("1", None, many)[0] == ["whsub-000"]


@pytest.mark.parametrize("limit", ["0", "101", "-1", "1.5", "ten", "050"])
def test_a_limit_outside_1_to_100_is_a_400_naming_it(limit):
    with pytest.raises(InvalidRequest) as refused:
        listed(limit, None, Hooks(()))
    assert refused.value.message == "limit must be an integer from 1 to 100"
    assert refused.value.details == [FieldProblem("limit", "must be an integer from 1 to 100")]


@pytest.mark.parametrize(
    "scope",
    [
        CursorScope("", "", "org-other", "webhooks"),  # another org's
        CursorScope("", "", "org-buyer"),  # the reservation list's
        CursorScope("node-a", "", "org-buyer", "webhooks"),
        CursorScope("", "active", "org-buyer", "webhooks"),
        CursorScope("", "", "org-buyer", "events"),  # another feed's
    ],
)
def test_a_cursor_of_another_list_is_a_400(scope):
    cursor = encode_cursor(Cursor("whsub-a"), scope, KEY)
    with pytest.raises(InvalidRequest) as refused:
        listed("2", cursor, Hooks(("whsub-a", "whsub-b", "whsub-c")))
    assert [d.field for d in refused.value.details] == ["cursor"]


def test_the_lists_own_cursor_is_bound_to_the_org_and_the_webhooks_list():
    scope = CursorScope("", "", "org-buyer", "webhooks")
    cursor = encode_cursor(Cursor("whsub-a"), scope, KEY)
    assert listed("1", cursor, Hooks(("whsub-a", "whsub-b", "whsub-c"))) == (
        ["whsub-b"],
        encode_cursor(Cursor("whsub-b"), scope, KEY),
    )


def parse(body: object, allow_local: bool = False) -> object:
    return subscribe_parser(lambda: allow_local)(RawBody(json.dumps(body)))


def test_every_problem_of_a_subscribe_body_is_named_by_its_field_and_in_the_message():
    body = {
        "url": "http://hooks.example.com/in",
        "types": ["workload.terminated", "no.such.type", "workload.terminated"],
    }
    with pytest.raises(InvalidRequest) as refused:
        parse(body)
    assert refused.value.details == [
        FieldProblem("url", "must start with https://"),
        FieldProblem("types[1]", "is not an event type"),
        FieldProblem("types[2]", "duplicate of workload.terminated"),
    ]
    assert refused.value.message == (
        "invalid request: url must start with https://, types[1] is not an event type, "
        "types[2] duplicate of workload.terminated"
    )


def test_a_valid_body_parses_and_the_local_receiver_only_where_allowed():
    body = {"url": URL, "types": ["workload.terminated", "reservation.created"]}
    parsed = parse(body)
    assert (parsed.url, parsed.types) == (URL, ["workload.terminated", "reservation.created"])
    assert parse({"url": URL}).types is None
    local = {"url": "http://127.0.0.1:8123/hook"}
    assert parse(local, allow_local=True).url == "http://127.0.0.1:8123/hook"
    with pytest.raises(InvalidRequest) as refused:
        parse(local)
    assert [d.field for d in refused.value.details] == ["url"]


def test_each_webhook_write_says_it_committed_naming_the_subscription_and_counts_it(
    caplog, monkeypatch
):
    counted: list[tuple[str, object, float]] = []
    monkeypatch.setattr(
        pipeline.metrics,
        "add_metric",
        lambda name, unit, value: counted.append((name, unit, value)),
    )
    caplog.set_level(logging.DEBUG, logger="reservations")
    clock = FakeClock(NOW)
    secrets = iter(f"whsec_{n:044d}" for n in range(10))
    the_ports = ports(
        FakeTable(clock), clock, new_id=lambda: "whsub-00000000000000000001",
        new_secret=lambda: next(secrets),
    )  # fmt: skip
    raw = RawBody(json.dumps({"url": URL}))
    made = run_write(subscribe_spec(lambda: False), endpoints.CREATE_WEBHOOK.at(), CALLER, raw,
                     None, the_ports)  # fmt: skip
    hook = json.loads(made.body)["id"]
    route = endpoints.ROTATE_WEBHOOK_SECRET.at(subscriptionId=hook)
    run_write(ROTATE_SECRET, route, CALLER, RawBody(None), None, the_ports)
    route = endpoints.DELETE_WEBHOOK.at(subscriptionId=hook)
    run_write(UNSUBSCRIBE, route, CALLER, RawBody(None), None, the_ports)
    said = [r for r in caplog.records if r.name == "reservations" and r.levelno == logging.INFO]
    committed = [r for r in said if r.getMessage().startswith("webhook ")]
    assert [r.getMessage() for r in committed] == [
        "webhook subscribed",
        "webhook secret rotated",
        "webhook deleted",
    ]
    assert [r.subscriptionId for r in committed] == [hook] * 3
    assert counted == [("WebhookSubscriptionsChanged", MetricUnit.Count, 1)] * 3


def test_a_subscribe_that_always_loses_says_so_and_is_the_409_naming_why(caplog):
    from reservations.kernel.errors import Conflict
    from reservations.kernel.writes import WriteConflict
    from tests.support.hook_fakes import FakeSubscriptionStore

    caplog.set_level(logging.DEBUG, logger="reservations")
    clock = FakeClock(NOW)
    the_ports = ports(FakeTable(clock), clock, new_secret=lambda: "whsec_" + "0" * 44)
    hooks = the_ports.webhooks
    assert isinstance(hooks, FakeSubscriptionStore)

    def someone_else_always_wrote_first(_write: object) -> None:
        raise WriteConflict("ConditionalCheckFailed")

    hooks.before_commit = someone_else_always_wrote_first
    raw = RawBody(json.dumps({"url": URL}))
    with pytest.raises(Conflict) as refused:
        run_write(subscribe_spec(lambda: False), endpoints.CREATE_WEBHOOK.at(), CALLER, raw,
                  None, the_ports)  # fmt: skip
    assert refused.value.message == (
        "the org's webhooks kept changing while subscribing; retry the request"
    )
    said = {r.getMessage() for r in caplog.records if r.name == "reservations"}
    assert "subscribe lost a race; retrying" in said


def test_a_key_without_events_read_does_not_see_its_own_orgs_subscription():
    from reservations.webhooks.subscriptions import get_subscription
    from tests.support.hook_fakes import FakeSubscriptionStore

    hooks = FakeSubscriptionStore(FakeTable(FakeClock(NOW)))
    hooks.subscriptions[("org-buyer", "whsub-1")] = subscription("whsub-1")
    assert get_subscription(CALLER, "whsub-1", hooks).id == "whsub-1"
    reader = Caller("key-ro", "org-buyer", frozenset({"reservation.read"}), key_hash="hash-ro")
    with pytest.raises(NotFound):
        get_subscription(reader, "whsub-1", hooks)


def test_a_subscribe_past_the_limit_is_counted_as_a_subscribe_refusal(monkeypatch):
    from reservations.webhooks.errors import SubscriptionLimit
    from tests.support.hook_fakes import FakeSubscriptionStore

    counted: list[tuple[str, object, float]] = []
    monkeypatch.setattr(
        pipeline.metrics,
        "add_metric",
        lambda name, unit, value: counted.append((name, unit, value)),
    )
    clock = FakeClock(NOW)
    the_ports = ports(FakeTable(clock), clock, new_secret=lambda: "whsec_" + "0" * 44)
    hooks = the_ports.webhooks
    assert isinstance(hooks, FakeSubscriptionStore)
    hooks.counts["org-buyer"] = 10
    raw = RawBody(json.dumps({"url": URL}))
    with pytest.raises(SubscriptionLimit):
        run_write(subscribe_spec(lambda: False), endpoints.CREATE_WEBHOOK.at(), CALLER, raw,
                  None, the_ports)  # fmt: skip
    assert counted == [("SubscribeRefusals", MetricUnit.Count, 1)]
