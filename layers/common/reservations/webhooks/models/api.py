"""The webhook endpoints' shapes: the subscribe body, what the answers show, an org's
subscriptions as the writes read them, and the writes on them (an org's ``ORGHOOK#``
partition, beside the node partitions' writes of ``nodes.models.writes``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, ClassVar

from pydantic import ConfigDict, Field, StrictStr, WithJsonSchema

from reservations.events import EVENT_TYPE_SCHEMA, EVENT_TYPES, EventTypeText
from reservations.kernel.bodies import StrictBody
from reservations.kernel.times import format_time
from reservations.kernel.wire import NextCursor, Timestamp, WireModel
from reservations.webhooks.models.domain import SigningSecrets, Subscription, SubscriptionStatus

# A subscription as the demo's session makes it (README.md).
_SUBSCRIPTION = {
    "id": "whk-5c2m9q",
    "url": "https://hooks.example.com/reservations",
    "types": ["workload.termination_requested"],
    "description": "spot terminations to the scheduler",
    "status": "active",
    "createdAt": "2026-11-29T10:00:00Z",
}

MAX_DESCRIPTION = 256
MAX_URL_LENGTH = 2048
# The characters a subscribed ``url`` may have, as the request schema says them (a JSON
# Schema pattern: ECMA-262, and Python's ``re`` reads it alike): printable ASCII but the
# backslash and "#". The subscribe parser refuses the rest, naming why
# (``rules.urls.send_target``); what the schema cannot say (https, a host name and not an
# address, the port) it checks besides.
URL_CHARACTERS = r'^[!"$-\[\]-~]+$'


class SubscribeRequest(StrictBody):
    """The body of ``POST /v1/webhooks``: where to send, which types (absent: every type)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "url": "https://hooks.example.com/reservations",
                    "types": ["workload.termination_requested"],
                    "description": "spot terminations to the scheduler",
                }
            ]
        },
    )

    url: StrictStr = Field(
        max_length=MAX_URL_LENGTH,
        description="https:// with a host name (no address, no user info, no fragment); "
        "port 443 or 1024-65535; printable ASCII without spaces, backslashes or #",
        json_schema_extra={"pattern": URL_CHARACTERS},
    )
    types: (
        Annotated[
            list[Annotated[StrictStr, WithJsonSchema(EVENT_TYPE_SCHEMA)]],
            Field(
                min_length=1, max_length=len(EVENT_TYPES), json_schema_extra={"uniqueItems": True}
            ),
        ]
        | None
    ) = Field(default=None, description="event types to deliver; absent: every type")
    description: StrictStr | None = Field(default=None, max_length=MAX_DESCRIPTION)


class NoBody(StrictBody):
    """A POST that takes no body: none, blank or ``{}`` (a rotation)."""

    model_config = ConfigDict(json_schema_extra={"examples": [{}]})


@dataclass(frozen=True)
class OrgHooks:
    """An org's subscriptions as a write reads them, and how many there are as its counter
    says (what the next write is conditioned on)."""

    org_id: str
    subscriptions: tuple[Subscription, ...]
    count: int

    def find(self, subscription_id: str) -> Subscription | None:
        return next((s for s in self.subscriptions if s.id == subscription_id), None)


@dataclass(frozen=True)
class CountedWrite:
    """A write that adds or removes a subscription, conditioned on the org's counter being
    ``count`` (as read)."""

    write_id: str
    subscription: Subscription
    count: int


class SubscriptionCreate(CountedWrite):
    """A new subscription; the org's counter goes from ``count`` to one more."""


class SubscriptionDelete(CountedWrite):
    """A subscription removed; the org's counter goes from ``count`` to one less."""


@dataclass(frozen=True)
class SecretRotation:
    """A subscription's secrets replaced, on condition that its current one is ``before``'s."""

    write_id: str
    subscription: Subscription
    before: SigningSecrets


# Every write of an org's webhooks partition.
HookWrite = SubscriptionCreate | SubscriptionDelete | SecretRotation


class SubscriptionView(WireModel):
    """A subscription as ``GET /v1/webhooks/{id}`` and the list show it: never its secret."""

    EXAMPLES: ClassVar[list[Any]] = [_SUBSCRIPTION]

    id: str
    url: str
    types: list[EventTypeText] | None = Field(None, description="absent: every type")
    description: str | None = None
    status: SubscriptionStatus = Field(
        description="disabled: every delivery failed for 5 days (delete and subscribe again)"
    )
    created_at: Timestamp
    disabled_at: Timestamp | None = None

    @classmethod
    def of(cls, subscription: Subscription) -> SubscriptionView:
        disabled = subscription.disabled_at
        return cls(
            id=subscription.id,
            url=subscription.url,
            types=None if subscription.types is None else sorted(subscription.types),
            description=subscription.description,
            status=subscription.status,
            created_at=format_time(subscription.created_at),
            disabled_at=None if disabled is None else format_time(disabled),
        )


class SubscriptionWithSecret(SubscriptionView):
    """A subscription with its signing secret: the answer of a subscribe and of a rotation,
    the only times the secret is shown."""

    EXAMPLES: ClassVar[list[Any]] = [
        {**_SUBSCRIPTION, "secret": "whsec_ExampleOnlyOfNoSubscription00000"}
    ]

    secret: str = Field(description="whsec_...: shown this once")

    @classmethod
    def with_secret(cls, subscription: Subscription) -> SubscriptionWithSecret:
        view = SubscriptionView.of(subscription)
        return cls(**view.model_dump(), secret=subscription.secrets.current)


class SubscriptionPage(WireModel):
    """One page of the org's subscriptions, sorted by id."""

    EXAMPLES: ClassVar[list[Any]] = [{"items": [_SUBSCRIPTION]}]

    items: list[SubscriptionView]
    next_cursor: NextCursor = None


class RetryQueued(WireModel):
    """A retry by hand, queued: the attempt it will be (sent within seconds)."""

    EXAMPLES: ClassVar[list[Any]] = [
        {
            "eventId": "evt-01jdx8m2k4q7r9t3v5w7y9a1c3",
            "attempt": 9,
            "queuedAt": "2026-11-30T08:15:00Z",
        }
    ]

    event_id: str
    attempt: int
    queued_at: Timestamp

    def __init__(self, event_id: str, attempt: int, queued_at: datetime) -> None:
        super().__init__(event_id=event_id, attempt=attempt, queued_at=format_time(queued_at))
