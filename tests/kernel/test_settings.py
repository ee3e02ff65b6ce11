"""The functions' settings: what must be set, what defaults to the deployed value, and the
standard endpoint variable the local stack uses."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from devstack import template
from reservations.kernel.aws import clients
from reservations.kernel.settings import (
    Settings,
    SettingsError,
    cursor_signing_key,
    event_bus_name,
    settings,
)
from reservations.nodes.settings import node_queue_settings
from reservations.terminations.settings import TerminationSettings
from reservations.webhooks.settings import WebhookSettings, webhook_delivery_queue_url

pytestmark = pytest.mark.disable_socket


@pytest.fixture(autouse=True)
def _fresh_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name, value in {
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",  # else making a client asks the metadata service
        "AWS_SECRET_ACCESS_KEY": "testing",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("TABLE_NAME", "ReservationsTable")
    clients.reset()
    yield
    monkeypatch.undo()
    clients.reset()


@pytest.mark.parametrize("value", [None, ""])
def test_a_missing_or_empty_table_name_is_an_error_naming_the_variable(monkeypatch, value):
    if value is None:
        monkeypatch.delenv("TABLE_NAME")
    else:
        monkeypatch.setenv("TABLE_NAME", value)
    with pytest.raises(SettingsError, match="TABLE_NAME"):
        settings()


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("KEY_CACHE_TTL_SECONDS", "a minute"),
        ("KEY_CACHE_TTL_SECONDS", "-1"),
        ("TERMINATION_MAX_DELIVERIES", "0"),
        ("SWEEPER_GRACE_SECONDS", "soon"),
        ("WEBHOOK_LOCAL_RECEIVER_HOST", ""),
        ("PLATFORM_FEED_SHARDS", "0"),
        ("PLATFORM_FEED_SHARDS", "65"),
        ("ORG_FEED_SHARDS", "org-a"),
        ("ORG_FEED_SHARDS", "org-a=0"),
        ("ORG_FEED_SHARDS", "org-a=65"),
        ("ORG_FEED_SHARDS", "=4"),
    ],
)
def test_a_garbled_setting_is_an_error_naming_the_variable(monkeypatch, variable, value):
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError, match=variable):
        settings()


def test_the_defaults_are_the_deployed_values():
    """A default may only say what the template deploys anyway."""
    globals_ = template.document()["Globals"]["Function"]["Environment"]["Variables"]
    parameters = template.document()["Parameters"]
    defaults = Settings.model_validate({"TABLE_NAME": "t"})
    sweeper = TerminationSettings.model_validate({})
    webhooks = WebhookSettings.model_validate({})
    assert defaults.key_cache_ttl_seconds == float(globals_["KEY_CACHE_TTL_SECONDS"])
    assert sweeper.sweeper_grace_seconds == parameters["SweeperGraceSeconds"]["Default"]
    assert (
        sweeper.confirm_deadline_seconds
        == parameters["TerminationConfirmDeadlineSeconds"]["Default"]
    )
    assert sweeper.max_deliveries == parameters["TerminationMaxDeliveries"]["Default"]
    assert sweeper.stuck_resend_seconds == parameters["StuckResendSeconds"]["Default"]
    assert defaults.history_retention_days == parameters["HistoryRetentionDays"]["Default"]
    sender = template.resources()["WebhookSenderFunction"]["Properties"]["Environment"]
    assert not webhooks.webhook_allow_local_receiver
    assert parameters["WebhookAllowLocalReceiver"]["Default"] == "false"
    assert (
        webhooks.webhook_local_receiver_host == sender["Variables"]["WEBHOOK_LOCAL_RECEIVER_HOST"]
    )
    assert globals_["HISTORY_RETENTION_DAYS"] == {"Ref": "HistoryRetentionDays"}
    assert defaults.event_relay_grace_seconds == parameters["EventRelayGraceSeconds"]["Default"]
    assert defaults.platform_feed_shards == parameters["PlatformFeedShards"]["Default"]
    assert globals_["PLATFORM_FEED_SHARDS"] == {"Ref": "PlatformFeedShards"}
    assert defaults.org_feed_shards == {}
    assert parameters["OrgFeedShards"]["Default"] == ""
    assert globals_["ORG_FEED_SHARDS"] == {"Ref": "OrgFeedShards"}


def test_feed_shards_the_operators_and_the_named_orgs_others_one(monkeypatch):
    monkeypatch.setenv("PLATFORM_FEED_SHARDS", "40")
    monkeypatch.setenv("ORG_FEED_SHARDS", " org-broker=8, org-spot.buyer=16 ,")
    current = settings()
    assert current.feed_shards(None) == 40
    assert current.feed_shards("org-broker") == 8
    assert current.feed_shards("org-spot.buyer") == 16
    assert current.feed_shards("org-lab") == 1
    monkeypatch.setenv("ORG_FEED_SHARDS", "")
    clients.reset()
    assert settings().feed_shards("org-broker") == 1


def test_the_template_declares_the_standard_endpoint_variable_empty():
    """Declared so that `sam local --env-vars` may set it; empty, so AWS is AWS."""
    variables = template.document()["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["AWS_ENDPOINT_URL"] == ""
    assert not [name for name in variables if "ENDPOINT" in name and name != "AWS_ENDPOINT_URL"]


def test_an_empty_endpoint_variable_means_the_services_own_endpoints(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "")
    assert clients.dynamodb().meta.endpoint_url == "https://dynamodb.us-east-1.amazonaws.com"
    assert clients.sqs().meta.endpoint_url == "https://sqs.us-east-1.amazonaws.com"


def test_the_clients_follow_the_standard_endpoint_variable_only(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5999")
    monkeypatch.setenv("LOCAL_AWS_ENDPOINT", "http://127.0.0.1:6999")
    assert clients.dynamodb().meta.endpoint_url == "http://127.0.0.1:5999"
    assert clients.sqs().meta.endpoint_url == "http://127.0.0.1:5999"


def test_the_webhook_delivery_queue_is_an_error_naming_its_variable_until_it_is_set(monkeypatch):
    monkeypatch.delenv("WEBHOOK_DELIVERY_QUEUE_URL", raising=False)
    with pytest.raises(SettingsError) as missing:
        webhook_delivery_queue_url()
    assert str(missing.value) == "invalid function environment: WEBHOOK_DELIVERY_QUEUE_URL: not set"
    monkeypatch.setenv("WEBHOOK_DELIVERY_QUEUE_URL", "https://sqs.test/deliveries")
    clients.reset()
    assert webhook_delivery_queue_url() == "https://sqs.test/deliveries"


def _refusal(read: Callable[[], object]) -> str:
    clients.reset()
    with pytest.raises(SettingsError) as missing:
        read()
    return str(missing.value)


def test_the_cursor_key_and_the_event_bus_are_errors_naming_their_variable_until_set(
    monkeypatch,
):
    for name in ("CURSOR_SIGNING_KEY", "EVENT_BUS_NAME"):
        monkeypatch.delenv(name, raising=False)
    assert _refusal(cursor_signing_key) == (
        "invalid function environment: CURSOR_SIGNING_KEY: not set"
    )
    assert _refusal(event_bus_name) == "invalid function environment: EVENT_BUS_NAME: not set"
    monkeypatch.setenv("CURSOR_SIGNING_KEY", "k" * 32)
    monkeypatch.setenv("EVENT_BUS_NAME", "reservations-events")
    clients.reset()
    assert (cursor_signing_key(), event_bus_name()) == (b"k" * 32, "reservations-events")


def test_the_node_queue_settings_are_an_error_naming_each_variable_not_set(monkeypatch):
    prefix, arn = "NODE_QUEUE_PREFIX", "NODE_DEAD_LETTER_QUEUE_ARN"
    for name in (prefix, arn):
        monkeypatch.delenv(name, raising=False)
    assert _refusal(node_queue_settings) == (
        f"invalid function environment: {prefix}, {arn}: not set"
    )
    monkeypatch.setenv(prefix, "reservations-node-")
    assert _refusal(node_queue_settings) == f"invalid function environment: {arn}: not set"
    monkeypatch.delenv(prefix)
    monkeypatch.setenv(arn, "arn:aws:sqs:us-east-1:000000000000:dead")
    assert _refusal(node_queue_settings) == f"invalid function environment: {prefix}: not set"
    monkeypatch.setenv(prefix, "reservations-node-")
    clients.reset()
    assert node_queue_settings() == (
        "reservations-node-",
        "arn:aws:sqs:us-east-1:000000000000:dead",
    )
