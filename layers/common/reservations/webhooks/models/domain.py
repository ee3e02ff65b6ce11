"""Webhooks: an org's subscriptions, their signing secrets, the deliveries of its events to
them (one per subscription and event, each attempt recorded), and the message that asks the
sender to deliver one.

A delivery is ``pending`` until an attempt is answered 2xx (``delivered``) or the last
attempt of the schedule failed (``failed``: listed, and retryable by hand).
"""

from __future__ import annotations

import base64
import binascii
import secrets
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from reservations.events import EventTypeText
from reservations.kernel.ids import RESOURCE_ID
from reservations.kernel.times import format_time
from reservations.kernel.wire import CURSOR_EXAMPLE, Timestamp, WireModel

# A delivery's attempt as the demo's receiver saw it fail (README.md).
_DELIVERY = {
    "eventId": "evt-01jdx8m2k4q7r9t3v5w7y9a1c3",
    "type": "reservation.reclaimed",
    "attempt": 2,
    "at": "2026-11-30T08:15:00Z",
    "status": 503,
    "error": "the endpoint answered 503",
    "nextAttemptAt": "2026-11-30T08:20:00Z",
    "state": "pending",
}

SUBSCRIPTION_ID_PREFIX = "whsub-"
_ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
SECRET_PREFIX = "whsec_"  # noqa: S105 - a prefix, not a secret
# Standard Webhooks secrets are base64 of 24 to 64 random bytes; ours are 32 (HMAC-SHA256's
# block of entropy), and a secret of another length within those bounds still verifies.
SECRET_BYTES = 32
_SECRET_BYTES_ALLOWED = range(24, 65)
# A rotated-out secret still signs for this long, so receivers can switch without a gap.
ROTATION_OVERLAP = timedelta(hours=24)
# The contract's limit per org.
MAX_SUBSCRIPTIONS_PER_ORG = 10
# An event, as the delivery's body, stays far below SQS's 256 KiB and DynamoDB's 400 KB.
MAX_BODY_CHARS = 128 * 1024


def new_subscription_id(choose: Callable[[str], str] = secrets.choice) -> str:
    """``whsub-`` and 20 random lower-case letters and digits (a path id like any other)."""
    return SUBSCRIPTION_ID_PREFIX + "".join(choose(_ID_ALPHABET) for _ in range(20))


def new_secret(token_bytes: Callable[[int], bytes] = secrets.token_bytes) -> str:
    """A Standard Webhooks secret: ``whsec_`` and the base64 of 32 random bytes."""
    return SECRET_PREFIX + base64.b64encode(token_bytes(SECRET_BYTES)).decode("ascii")


def is_secret(value: str) -> bool:
    """``whsec_`` and standard base64 of 24 to 64 bytes: what a Standard Webhooks library
    accepts as a signing secret."""
    if not value.startswith(SECRET_PREFIX):
        return False
    try:
        key = base64.b64decode(value.removeprefix(SECRET_PREFIX), validate=True)
    except (binascii.Error, ValueError):
        return False
    return len(key) in _SECRET_BYTES_ALLOWED


class SubscriptionStatus(StrEnum):
    ACTIVE = "active"
    # Every delivery failed for 5 days; re-enabled only by deleting and subscribing again.
    DISABLED = "disabled"

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {**handler(schema), "examples": ["active"]}


@dataclass(frozen=True, slots=True)
class SigningSecrets:
    """The secret deliveries are signed with, and during a rotation the one before it,
    which also signs until ``previous_expires_at``."""

    current: str
    previous: str | None = None
    previous_expires_at: datetime | None = None

    def in_force(self, now: datetime) -> tuple[str, ...]:
        """Every secret a delivery made at ``now`` is signed with, the current one first."""
        if self.previous is None or self.previous_expires_at is None:
            return (self.current,)
        if now >= self.previous_expires_at:
            return (self.current,)
        return (self.current, self.previous)

    def rotated(self, new: str, now: datetime) -> SigningSecrets:
        """``new`` signs from now on; the current one keeps signing for ``ROTATION_OVERLAP``
        (a rotation during an overlap ends the older secret's at once)."""
        return SigningSecrets(
            current=new, previous=self.current, previous_expires_at=now + ROTATION_OVERLAP
        )


@dataclass(frozen=True, slots=True)
class Subscription:
    """One org's endpoint for its feed. ``types`` None: every type. ``failing_since``: the
    first failed attempt since the last delivered one (None while deliveries succeed)."""

    id: str
    org_id: str
    url: str
    secrets: SigningSecrets
    created_at: datetime
    types: frozenset[str] | None = None
    description: str | None = None
    status: SubscriptionStatus = SubscriptionStatus.ACTIVE
    failing_since: datetime | None = None
    disabled_at: datetime | None = None

    def wants(self, event_type: str) -> bool:
        """Whether events of this type are sent to it."""
        return self.types is None or event_type in self.types

    def disabled(self, at: datetime) -> Subscription:
        return replace(self, status=SubscriptionStatus.DISABLED, disabled_at=at)


class DeliveryState(StrEnum):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {**handler(schema), "examples": ["failed"]}


@dataclass(frozen=True, slots=True)
class Delivery:
    """One event's delivery to one subscription: where it stands after ``attempts``
    attempts. ``body`` is the exact payload every attempt sends (and signs), kept so a
    failed delivery can be sent again by hand."""

    subscription_id: str
    event_id: str
    event_type: str
    body: str
    state: DeliveryState = DeliveryState.PENDING
    attempts: int = 0
    last_attempt_at: datetime | None = None
    next_attempt_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class AttemptResult:
    """What one attempt got back: the HTTP status (None when no response came), or why it
    was not answered or not even made (``error``)."""

    status: int | None = None
    error: str | None = None
    # Not sent at all: the URL or an address of its host is refused (no request forgery).
    refused: bool = False

    @property
    def delivered(self) -> bool:
        """Only a 2xx answer is a delivery."""
        return self.status is not None and 200 <= self.status < 300


@dataclass(frozen=True, slots=True)
class DeliveryAttempt:
    """One attempt, as the delivery listing shows it (newest first)."""

    subscription_id: str
    event_id: str
    event_type: str
    attempt: int
    at: datetime
    result: AttemptResult
    state: DeliveryState
    next_attempt_at: datetime | None = None


class DeliveryRequest(BaseModel):
    """The delivery queue's message: deliver this event to this subscription. One message
    per (subscription, event); the attempt count lives in the delivery's record, so a
    message received again (a crash, SQS's at-least-once) finds where the delivery stands.
    ``body`` is the event as the subscription's org sees it, exactly as it is sent."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    version: int = Field(1, ge=1, le=1)
    subscription_id: str = Field(alias="subscriptionId", pattern=RESOURCE_ID)
    org_id: str = Field(alias="orgId", pattern=RESOURCE_ID)
    event_id: str = Field(alias="eventId", pattern=RESOURCE_ID)
    event_type: str = Field(alias="eventType", min_length=1, max_length=128)
    body: str = Field(min_length=2, max_length=MAX_BODY_CHARS)
    # A retry by hand of a failed delivery: the attempts it had failed after. The sender
    # makes one more attempt while the delivery is still failed after that many (a copy of
    # the message, or a retry asked twice, finds one more and sends nothing).
    retry_of: int | None = Field(None, alias="retryOf", ge=1)

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, exclude_none=True)


class DeliveryView(WireModel):
    """One attempt in ``GET /v1/webhooks/{id}/deliveries`` (absent rather than null)."""

    EXAMPLES: ClassVar[list[Any]] = [_DELIVERY]

    event_id: str
    type: EventTypeText
    attempt: int
    at: Timestamp
    status: int | None = Field(None, description="The HTTP status; absent when none came back")
    error: str | None = None
    next_attempt_at: Timestamp | None = None
    state: DeliveryState = Field(description="The delivery's state after this attempt")

    @classmethod
    def of(cls, attempt: DeliveryAttempt) -> DeliveryView:
        """An attempt as the listing shows it (times to the second, as everywhere)."""
        next_at = attempt.next_attempt_at
        return cls(
            event_id=attempt.event_id,
            type=attempt.event_type,
            attempt=attempt.attempt,
            at=format_time(attempt.at),
            status=attempt.result.status,
            error=attempt.result.error,
            next_attempt_at=None if next_at is None else format_time(next_at),
            state=attempt.state,
        )


class DeliveryPage(WireModel):
    EXAMPLES: ClassVar[list[Any]] = [{"items": [_DELIVERY], "nextCursor": CURSOR_EXAMPLE}]
    items: list[DeliveryView]
    next_cursor: str | None = None


class DeliveryDetail(WireModel):
    """``GET /v1/webhooks/{id}/deliveries/{eventId}``: one event's delivery, where it stands
    and every attempt made of it, newest first, each as the listing shows it."""

    EXAMPLES: ClassVar[list[Any]] = [
        {
            "subscriptionId": "whsub-0123456789abcdefghij",
            "eventId": _DELIVERY["eventId"],
            "type": _DELIVERY["type"],
            "state": "pending",
            "attemptCount": 2,
            "lastAttemptAt": _DELIVERY["at"],
            "nextAttemptAt": _DELIVERY["nextAttemptAt"],
            "attempts": [
                _DELIVERY,
                {
                    **_DELIVERY,
                    "attempt": 1,
                    "at": "2026-11-30T08:14:55Z",
                    "status": 500,
                    "error": "the endpoint answered 500",
                    "nextAttemptAt": _DELIVERY["at"],
                },
            ],
        }
    ]

    subscription_id: str
    event_id: str
    type: EventTypeText
    state: DeliveryState = Field(
        description="pending (attempted again at nextAttemptAt), delivered, or failed "
        "(no attempt is due; POST .../retry sends it again)"
    )
    attempt_count: int = Field(description="How many attempts were made")
    last_attempt_at: Timestamp | None = Field(None, description="Absent before the first")
    next_attempt_at: Timestamp | None = Field(
        None, description="When the next attempt is due; absent unless pending and scheduled"
    )
    attempts: list[DeliveryView] = Field(description="Every attempt made, newest first")

    @classmethod
    def of(cls, delivery: Delivery, attempts: list[DeliveryAttempt]) -> DeliveryDetail:
        last, next_at = delivery.last_attempt_at, delivery.next_attempt_at
        pending = delivery.state is DeliveryState.PENDING
        return cls(
            subscription_id=delivery.subscription_id,
            event_id=delivery.event_id,
            type=delivery.event_type,
            state=delivery.state,
            attempt_count=delivery.attempts,
            last_attempt_at=None if last is None else format_time(last),
            next_attempt_at=None if next_at is None or not pending else format_time(next_at),
            attempts=[DeliveryView.of(a) for a in attempts],
        )
