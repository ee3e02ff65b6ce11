"""Events: what happened, as CloudEvents 1.0 JSON envelopes, and what deciding who may see
each one needs (kept with it when it is written, so a read asks nothing else)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from reservations.kernel.envelope import StoredEvent
from reservations.kernel.wire import CURSOR_EXAMPLE, WireModel

# What the demo fleet's reclaim wrote (README.md), as the feeds answer it.
_EVENT: dict[str, Any] = {
    "specversion": "1.0",
    "id": "evt-01jdx8m2k4q7r9t3v5w7y9a1c3",
    "type": "reservation.reclaimed",
    "source": "/v1/nodes/node-a1",
    "subject": "reservations/res-a-active",
    "time": "2026-11-30T08:15:00.123Z",
    "datacontenttype": "application/json",
    "data": {
        "actor": {"orgId": "org-broker"},
        "reason": "lab needs them",
        "unitIds": ["0000:04:00.0"],
        "terminated": ["vm-17"],
        "skipped": [],
    },
}

# vm-18 reported stopped by its node (as GET then answers it: ``nodes.models.views``): its
# own use, to the commit of the report's write (the event's time); ``data.time`` is the
# node's own report time.
_TERMINATED: dict[str, Any] = {
    "specversion": "1.0",
    "id": "evt-q3xk7mwa2rbe5tnc4vjh6yd2lu",
    "type": "workload.terminated",
    "source": "/v1/nodes/node-a1",
    "subject": "workloads/vm-18",
    "time": "2026-11-30T08:17:02.655Z",
    "datacontenttype": "application/json",
    "data": {
        "kind": "vm",
        "tier": "spot",
        "orgId": "org-spotbuyer",
        "unitIds": ["0000:05:00.0", "0000:08:00.0"],
        "outcome": "terminated",
        "time": "2026-11-30T08:17:01.000Z",
        "terminationId": "term-7f3m",
        "reservationId": "res-a-active",
        "requestedAt": "2026-11-30T08:15:00.318Z",
        "usedFrom": "2026-11-30T07:52:00.318Z",
        "usedTo": "2026-11-30T08:17:02.655Z",
        "gpuMs": 3004674,
    },
}

# Every event type of the contract's table, in its order: the one list of them a feed's
# filter, a subscription and the document accept (each slice declares the types it builds,
# ``kernel.envelope.EVENT_TYPES``; a test holds the two lists to each other).
EventTypeName = Literal[
    "reservation.created",
    "reservation.released",
    "reservation.reclaimed",
    "reservation.cancelled",
    "reservation.reaffirmed",
    "reservation.needs_review",
    "reservation.updated",
    "reservation.activated",
    "reservation.expiring",
    "reservation.expired",
    "workload.placed",
    "workload.ended",
    "workload.started",
    "workload.termination_requested",
    "workload.terminated",
    "workload.termination_stuck",
    "node.registered",
    "node.updated",
]
EVENT_TYPES: tuple[str, ...] = get_args(EventTypeName)
# An event type's name as a response shows it: a string (not checked again when shown), one
# of :data:`EVENT_TYPES` as the document declares it.
EVENT_TYPE_SCHEMA = {"type": "string", "enum": list(EVENT_TYPES)}
EventTypeText = Annotated[str, WithJsonSchema(EVENT_TYPE_SCHEMA)]


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


class CloudEventView(BaseModel):
    """One event as the feeds answer it (CloudEvents 1.0, JSON format)."""

    model_config = ConfigDict(frozen=True, json_schema_extra={"examples": [_EVENT, _TERMINATED]})

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

    EXAMPLES: ClassVar[list[Any]] = [
        {"items": [_EVENT], "nextCursor": CURSOR_EXAMPLE, "hasMore": False}
    ]

    items: list[CloudEventView]
    next_cursor: str = Field(
        description="opaque; on every page, the last too: where the next events will be. "
        "Pass it as ?cursor= to read on, now or later"
    )
    has_more: bool = Field(
        description="false: this page reached the feed's current end (call again later "
        "with nextCursor); true: more events are readable now"
    )
