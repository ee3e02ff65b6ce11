"""Events: what happened, as CloudEvents 1.0 JSON envelopes, and what deciding who may see
each one needs (kept with it when it is written, so a read asks nothing else)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from reservations.kernel.times import format_event_time, parse_time
from reservations.kernel.wire import WireModel

SPEC_VERSION = "1.0"
CONTENT_TYPE = "application/json"
SOURCE_PREFIX = "/v1/nodes/"


class EventType(StrEnum):
    """Every type of the contract's table."""

    RESERVATION_CREATED = "reservation.created"
    RESERVATION_RELEASED = "reservation.released"
    RESERVATION_RECLAIMED = "reservation.reclaimed"
    RESERVATION_CANCELLED = "reservation.cancelled"
    RESERVATION_REAFFIRMED = "reservation.reaffirmed"
    RESERVATION_NEEDS_REVIEW = "reservation.needs_review"
    WORKLOAD_PLACED = "workload.placed"
    WORKLOAD_ENDED = "workload.ended"
    WORKLOAD_TERMINATION_REQUESTED = "workload.termination_requested"
    WORKLOAD_TERMINATED = "workload.terminated"
    WORKLOAD_TERMINATION_STUCK = "workload.termination_stuck"
    NODE_REGISTERED = "node.registered"
    NODE_UPDATED = "node.updated"


# An event type's name as a response shows it: a string (not checked again when shown), one
# of :class:`EventType`'s as the document declares it.
EVENT_TYPE_SCHEMA = {"type": "string", "enum": [event_type.value for event_type in EventType]}
EventTypeText = Annotated[str, WithJsonSchema(EVENT_TYPE_SCHEMA)]


@dataclass(frozen=True, slots=True)
class Actor:
    """Who made the change: the calling key's org and its (non-secret) key id."""

    org_id: str
    key_id: str


@dataclass(frozen=True, slots=True)
class EventContext:
    """Where, when, by whom and under which write an event happened: what every builder
    takes besides what changed. ``change_id`` is the write's own id, the same when a retry
    rebuilds the write, so the event's id is too. ``actor`` None: the service itself (a
    node's report, the sweeper)."""

    node_id: str
    owner_org_id: str
    change_id: str
    at: datetime
    actor: Actor | None = None


@dataclass(frozen=True, slots=True)
class CloudEvent:
    """One event. ``data`` is JSON-ready and holds no ``actor``: the envelope adds it."""

    id: str
    type: EventType
    node_id: str
    subject: str
    time: datetime
    data: Mapping[str, Any]
    actor: Actor | None = None

    def envelope(self, show_key_id: bool) -> dict[str, Any]:
        """The CloudEvents 1.0 JSON form; ``actor.keyId`` only when ``show_key_id``."""
        data: dict[str, Any] = {}
        if self.actor is not None:
            actor = {"orgId": self.actor.org_id}
            if show_key_id:
                actor["keyId"] = self.actor.key_id
            data["actor"] = actor
        data.update(self.data)
        return {
            "specversion": SPEC_VERSION,
            "id": self.id,
            "type": self.type.value,
            "source": SOURCE_PREFIX + self.node_id,
            "subject": self.subject,
            "time": format_event_time(self.time),
            "datacontenttype": CONTENT_TYPE,
            "data": data,
        }

    def to_json(self) -> str:
        """The whole envelope (key id included), compact: how it is stored and published."""
        return json.dumps(self.envelope(show_key_id=True), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> CloudEvent:
        """The event :meth:`to_json` wrote."""
        envelope = json.loads(text)
        data = dict(envelope["data"])
        actor = data.pop("actor", None)
        return cls(
            id=envelope["id"],
            type=EventType(envelope["type"]),
            node_id=envelope["source"].removeprefix(SOURCE_PREFIX),
            subject=envelope["subject"],
            time=parse_time(envelope["time"]),
            data=data,
            actor=Actor(actor["orgId"], actor["keyId"]) if actor else None,
        )


@dataclass(frozen=True, slots=True)
class ReviewScope:
    """What a node update's reviews are derived from, bounded by the node's units (at most
    64 of each), never by its reservations: the write's id (the derived events' ids follow
    from it), the generation it set, the units it changed or removed, and each unit's
    generation of last change before and after it (None: a node item that kept none). The
    relay reads the node's reservations and judges each against it (``rules.topology``)."""

    change_id: str
    topology_gen: int | None
    unit_ids: frozenset[str]
    before: Mapping[str, int] | None
    after: Mapping[str, int]

    def to_json(self) -> str:
        return json.dumps(
            {
                "changeId": self.change_id,
                "topologyGen": self.topology_gen,
                "unitIds": sorted(self.unit_ids),
                "before": None if self.before is None else dict(sorted(self.before.items())),
                "after": dict(sorted(self.after.items())),
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> ReviewScope:
        fields = json.loads(text)
        before = fields["before"]
        return cls(
            change_id=fields["changeId"],
            topology_gen=fields["topologyGen"],
            unit_ids=frozenset(fields["unitIds"]),
            before=None if before is None else {str(k): int(v) for k, v in before.items()},
            after={str(k): int(v) for k, v in fields["after"].items()},
        )


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event with what visibility needs, fixed when it is written: the node's owner then,
    and the orgs besides the operator and the owner that may see it (a reservation's
    managers and audience, a workload's org, the reclaiming reservation's managers).
    ``expires_at``: when it leaves the feeds (None until it is stored). ``review``: a node
    update's :class:`ReviewScope`, from which the relay derives one
    ``reservation.needs_review`` per reservation the update put under review and writes it
    into the node's feed (as many as the node has reservations: they cannot fit in the
    update's own transaction, nor in its event's item). ``position``: where it was recorded
    in the feed it was read from (None until it is stored; ``rules.feeds``)."""

    event: CloudEvent
    owner_org_id: str
    audience_org_ids: frozenset[str] = frozenset()
    expires_at: datetime | None = None
    review: ReviewScope | None = None
    position: str | None = None

    @property
    def id(self) -> str:
        return self.event.id


@dataclass(frozen=True, slots=True)
class PendingEvent:
    """An event not yet relayed everywhere: the outlets it already reached."""

    stored: StoredEvent
    relayed_to: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class UnreadableEvent:
    """A marked item that is not an event the relay can read: where it is, and why."""

    key: str
    problem: str


@dataclass(frozen=True, slots=True)
class EventsRead:
    """Events of one feed in feed order, from some position on; ``last_position`` when the
    read stopped before the feed's end (the next read goes on after it)."""

    events: tuple[StoredEvent, ...]
    last_position: str | None = None


@dataclass(frozen=True, slots=True)
class NodeFeedAccess:
    """Who may read a node's events besides the operator: its owner, every org its
    reservations name, and every org its workloads ran for (read from the node's list
    access item; a named org until the moment kept with it, as for the reservation list)."""

    owner_org_id: str
    named_until: Mapping[str, datetime] = field(default_factory=dict)
    workload_org_ids: frozenset[str] = field(default_factory=frozenset)


EventTypeName = Literal[
    "reservation.created",
    "reservation.released",
    "reservation.reclaimed",
    "reservation.cancelled",
    "reservation.reaffirmed",
    "reservation.needs_review",
    "workload.placed",
    "workload.ended",
    "workload.termination_requested",
    "workload.terminated",
    "workload.termination_stuck",
    "node.registered",
    "node.updated",
]


class CloudEventView(BaseModel):
    """One event as the feeds answer it (CloudEvents 1.0, JSON format)."""

    model_config = ConfigDict(frozen=True)

    specversion: Literal["1.0"]
    id: str = Field(description="evt-...; subscribers deduplicate by it")
    type: EventTypeName
    source: str = Field(description="/v1/nodes/<nodeId>")
    subject: str = Field(description="reservations/<id>, workloads/<id> or nodes/<id>")
    time: str = Field(
        description="RFC 3339 UTC, to the millisecond", json_schema_extra={"format": "date-time"}
    )
    datacontenttype: Literal["application/json"]
    data: dict[str, Any] = Field(
        description="what happened; actor {orgId, keyId (operator and node owner only)} "
        "when a key made the change"
    )


class EventPage(WireModel):
    """One page of a feed, in the order its events were recorded."""

    items: list[CloudEventView]
    next_cursor: str = Field(
        description="opaque; on every page, the last too: where the next events will be. "
        "Pass it as ?cursor= to read on, now or later"
    )
    has_more: bool = Field(
        description="false: this page reached the feed's current end (call again later "
        "with nextCursor); true: more events are readable now"
    )
