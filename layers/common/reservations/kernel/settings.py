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
    # Signs the lists' page cursors (the reservation list and the event feeds: from a
    # Secrets Manager secret the stack makes). No default: a deployment without it must not
    # sign with a known key.
    cursor_signing_key: str | None = Field(None, alias="CURSOR_SIGNING_KEY", min_length=32)
    # How long history is kept (events among it): the stack's HistoryRetentionDays.
    history_retention_days: int = Field(400, alias="HISTORY_RETENTION_DAYS", ge=1, le=36500)
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


# Each slice's own settings (``<slice>/settings.py``), registered by :func:`section` when the
# slice is imported: what :func:`settings` checks besides the kernel's own.
SECTIONS: list[type[BaseModel]] = []
_Section = TypeVar("_Section", bound=BaseModel)


@cache
def settings() -> Settings:
    """The settings from os.environ, checked with every registered section's (once: a bad
    variable fails the function's first invocation); raises SettingsError naming each bad
    variable."""
    environment = dict(os.environ)
    problems = [
        problem for model in SECTIONS for problem in _problems(model, environment) if problem
    ]
    try:
        current = Settings.model_validate(environment)
    except ValidationError as error:
        problems = [_problem(error), *problems]
        current = None
    if current is None or problems:
        raise SettingsError(f"invalid function environment: {'; '.join(problems)}")
    return current


def _problem(error: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(part) for part in problem['loc'])}: "
        + ("not set" if problem["type"] == "missing" else problem["msg"])
        for problem in error.errors()
    )


def _problems(model: type[BaseModel], environment: dict[str, str]) -> list[str]:
    try:
        model.model_validate(environment)
    except ValidationError as error:
        return [_problem(error)]
    return []


def section(model: type[_Section]) -> Callable[[], _Section]:
    """A slice's own settings, registered for :func:`settings` to check: the reader returned
    reads them from os.environ at each call (a few fields, cheap), raising SettingsError
    naming each bad variable."""
    SECTIONS.append(model)

    def read() -> _Section:
        try:
            return model.model_validate(dict(os.environ))
        except ValidationError as error:
            raise SettingsError(f"invalid function environment: {_problem(error)}") from None

    return read


def required(variable: str, value: str | None) -> str:
    """A setting that names a resource and has no default; SettingsError naming the
    variable when it is not set."""
    if value is None:
        raise SettingsError(f"invalid function environment: {variable}: not set")
    return value


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
    return required("CURSOR_SIGNING_KEY", settings().cursor_signing_key).encode()


def event_bus_name() -> str:
    """The stack's event bus; SettingsError naming the variable when it is not set."""
    return required("EVENT_BUS_NAME", settings().event_bus_name)


def check_settings(handler: Handler) -> Handler:
    """Handler decorator: validate the settings before anything else runs (once per container)."""

    @functools.wraps(handler)
    def checked(event: Any, context: Any) -> Any:
        settings()
        return handler(event, context)

    return checked  # type: ignore[return-value]
