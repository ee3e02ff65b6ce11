"""The event envelope: what happened, as a CloudEvents 1.0 JSON envelope, and what deciding
who may see it needs (kept with it when it is written, so a read asks nothing else). Each
slice builds its own events in it; the contract's types are named there, not here."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from reservations.kernel.times import format_event_time, parse_time

SPEC_VERSION = "1.0"
CONTENT_TYPE = "application/json"
SOURCE_PREFIX = "/v1/nodes/"


class Derivation(Protocol):
    """What the relay derives further events from, kept with the event that carries it."""

    def to_json(self) -> str: ...


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
    type: str  # one of the contract's event types (each slice names its own)
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
            "type": self.type,
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
            type=envelope["type"],
            node_id=envelope["source"].removeprefix(SOURCE_PREFIX),
            subject=envelope["subject"],
            time=parse_time(envelope["time"]),
            data=data,
            actor=Actor(actor["orgId"], actor["keyId"]) if actor else None,
        )


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event with what visibility needs, fixed when it is written: the node's owner then,
    and the orgs besides the operator and the owner that may see it (a reservation's
    managers and audience, a workload's org, the reclaiming reservation's managers).
    ``expires_at``: when it leaves the feeds (None until it is stored). ``review``: a node
    update's review scope, from which the relay derives one
    ``reservation.needs_review`` per reservation the update put under review and writes it
    into the node's feed (as many as the node has reservations: they cannot fit in the
    update's own transaction, nor in its event's item). ``position``: where it was recorded
    in the feed it was read from (None until it is stored; ``rules.feeds``)."""

    event: CloudEvent
    owner_org_id: str
    audience_org_ids: frozenset[str] = frozenset()
    expires_at: datetime | None = None
    review: Derivation | None = None
    position: str | None = None

    @property
    def id(self) -> str:
        return self.event.id
