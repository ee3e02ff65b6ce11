"""The function's settings: its environment (template.yaml's Globals), validated once.

A missing table name fails the first invocation with an error naming the variable, instead
of a DynamoDB error about a table called ``None`` later. Defaults exist only where they are
the deployed value (the template and its parameter defaults say the same).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from functools import cache
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

Handler = TypeVar("Handler", bound=Callable[..., Any])


# The most shards a feed may have: a page of it is one Query per shard.
MAX_FEED_SHARDS = 64


class SettingsError(RuntimeError):
    """The function's environment lacks or garbles a setting (a deployment error)."""


class Settings(BaseModel):
    """What the functions read from their environment."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    table_name: str = Field(alias="TABLE_NAME", min_length=1)
    # Revocation takes effect within this; 60 s is the deployed value.
    key_cache_ttl_seconds: float = Field(60.0, alias="KEY_CACHE_TTL_SECONDS", ge=0)
    # The sweeper's pace (set on SweeperFunction from the stack's parameters; the defaults
    # are those parameters' defaults): how long a committed termination waits for the
    # reclaim's own send, how long a delivered one may stay unreported, how many deliveries
    # before it is flagged stuck, and the slow pace at which a stuck one is still sent.
    sweeper_grace_seconds: float = Field(60.0, alias="SWEEPER_GRACE_SECONDS", ge=0)
    confirm_deadline_seconds: float = Field(
        600.0, alias="TERMINATION_CONFIRM_DEADLINE_SECONDS", ge=0
    )
    max_deliveries: int = Field(5, alias="TERMINATION_MAX_DELIVERIES", ge=1)
    stuck_resend_seconds: float = Field(3600.0, alias="STUCK_RESEND_SECONDS", ge=0)
    # Signs the lists' page cursors (the reservation list and the event feeds: from a
    # Secrets Manager secret the stack makes). No default: a deployment without it must not
    # sign with a known key.
    cursor_signing_key: str | None = Field(None, alias="CURSOR_SIGNING_KEY", min_length=32)
    # Where a registered node's queue is made (PutNodeFunction only: the stack's
    # NodeQueuePrefix and its shared dead-letter queue). No default: they name resources.
    node_queue_prefix: str | None = Field(None, alias="NODE_QUEUE_PREFIX", min_length=1)
    node_dead_letter_queue_arn: str | None = Field(
        None, alias="NODE_DEAD_LETTER_QUEUE_ARN", min_length=1
    )
    # How long history is kept (events among it): the stack's HistoryRetentionDays.
    history_retention_days: int = Field(400, alias="HISTORY_RETENTION_DAYS", ge=1, le=36500)
    # The webhook sender's queue (WebhookSenderFunction only), whose messages it puts back
    # until their next attempt. No default: it names a resource.
    webhook_delivery_queue_url: str | None = Field(
        None, alias="WEBHOOK_DELIVERY_QUEUE_URL", min_length=1
    )
    # The stack's WebhookAllowLocalReceiver (off unless the local stack turns it on): a
    # subscription may name http://127.0.0.1:<port>, reached at WEBHOOK_LOCAL_RECEIVER_HOST.
    webhook_allow_local_receiver: bool = Field(False, alias="WEBHOOK_ALLOW_LOCAL_RECEIVER")
    webhook_local_receiver_host: str = Field(
        "127.0.0.1", alias="WEBHOOK_LOCAL_RECEIVER_HOST", min_length=1
    )
    # The stack's EventBridge bus (the event relays only). No default: it names a resource.
    event_bus_name: str | None = Field(None, alias="EVENT_BUS_NAME", min_length=1)
    # How long the scheduled relay leaves a new event to the stream's relay.
    event_relay_grace_seconds: float = Field(60.0, alias="EVENT_RELAY_GRACE_SECONDS", ge=0)
    # The stack's ExpiryWarningMinutes: how long before a reservation's ``endsAt`` its
    # ``reservation.expiring`` is armed (0: none). A write that arms it keeps it on the item.
    expiry_warning_minutes: int = Field(60, alias="EXPIRY_WARNING_MINUTES", ge=0, le=525600)

    # How many shards (partitions) the operator's feed of every event is split into, and the
    # orgs whose own feed is split too ("org-a=4,org-b=8"; every other org's feed is one
    # partition): the stack's PlatformFeedShards and OrgFeedShards. Only ever raised: a
    # cursor remembers the shards it read, and a shard it does not know is read from the
    # start; a shard no longer read would lose what is in it (``docs/scale.md``).
    platform_feed_shards: int = Field(32, alias="PLATFORM_FEED_SHARDS", ge=1, le=MAX_FEED_SHARDS)
    org_feed_shards: dict[str, int] = Field(
        default_factory=dict, alias="ORG_FEED_SHARDS", validate_default=False
    )

    @field_validator("org_feed_shards", mode="before")
    @classmethod
    def _org_shards(cls, value: object) -> object:
        """``org-a=4,org-b=8`` (spaces ignored; empty: none) to a mapping, each count
        1-MAX_FEED_SHARDS."""
        if not isinstance(value, str):
            return value
        shards: dict[str, int] = {}
        for part in filter(None, (p.strip() for p in value.split(","))):
            org, _, count = part.partition("=")
            if not org.strip() or not count.strip().isdigit():
                raise ValueError(f"{part!r} is not org=count")
            number = int(count)
            if not 1 <= number <= MAX_FEED_SHARDS:
                raise ValueError(f"{org.strip()}: shards must be 1-{MAX_FEED_SHARDS}")
            shards[org.strip()] = number
        return shards

    def feed_shards(self, org_id: str | None) -> int:
        """How many shards an org's feed has (``org_id`` None: the operator's)."""
        if org_id is None:
            return self.platform_feed_shards
        return self.org_feed_shards.get(org_id, 1)


@cache
def settings() -> Settings:
    """The settings from os.environ; raises SettingsError naming each bad variable."""
    try:
        return Settings.model_validate(dict(os.environ))
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in problem['loc'])}: "
            + ("not set" if problem["type"] == "missing" else problem["msg"])
            for problem in error.errors()
        )
        raise SettingsError(f"invalid function environment: {problems}") from None


class _ExpiryWarning(BaseModel):
    minutes: int = Field(60, alias="EXPIRY_WARNING_MINUTES", ge=0, le=525600)


def expiry_warning_minutes() -> int:
    """The stack's ExpiryWarningMinutes, read on its own (the fleet loader arms reservations
    too, without a table's settings); SettingsError when it is garbled."""
    try:
        return _ExpiryWarning.model_validate(dict(os.environ)).minutes
    except ValidationError as error:
        message = error.errors()[0]["msg"]
        raise SettingsError(
            f"invalid function environment: EXPIRY_WARNING_MINUTES: {message}"
        ) from None


def cursor_signing_key() -> bytes:
    """The list cursor's HMAC key; SettingsError naming the variable when it is not set."""
    key = settings().cursor_signing_key
    if key is None:
        raise SettingsError("invalid function environment: CURSOR_SIGNING_KEY: not set")
    return key.encode()


def webhook_delivery_queue_url() -> str:
    """The webhook delivery queue; SettingsError naming the variable when it is not set."""
    url = settings().webhook_delivery_queue_url
    if url is None:
        raise SettingsError("invalid function environment: WEBHOOK_DELIVERY_QUEUE_URL: not set")
    return url


def event_bus_name() -> str:
    """The stack's event bus; SettingsError naming the variable when it is not set."""
    name = settings().event_bus_name
    if name is None:
        raise SettingsError("invalid function environment: EVENT_BUS_NAME: not set")
    return name


def node_queue_settings() -> tuple[str, str]:
    """The node queues' name prefix and dead-letter queue ARN; SettingsError naming each
    variable that is not set."""
    current = settings()
    prefix, arn = current.node_queue_prefix, current.node_dead_letter_queue_arn
    if prefix is None or arn is None:
        missing = [
            name
            for name, value in (("NODE_QUEUE_PREFIX", prefix), ("NODE_DEAD_LETTER_QUEUE_ARN", arn))
            if value is None
        ]
        raise SettingsError(f"invalid function environment: {', '.join(missing)}: not set")
    return prefix, arn


def check_settings(handler: Handler) -> Handler:
    """Handler decorator: validate the settings before anything else runs (once per container)."""

    @functools.wraps(handler)
    def checked(event: Any, context: Any) -> Any:
        settings()
        return handler(event, context)

    return checked  # type: ignore[return-value]
