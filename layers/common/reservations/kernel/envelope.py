"""The event envelope: what happened, as a CloudEvents 1.0 JSON envelope, and what deciding
who may see it needs (kept with it when it is written, so a read asks nothing else). Each
slice builds its own events in it; the contract's types are named there, not here."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol, TypeVar

from reservations.kernel.times import format_event_time, format_time, parse_time, to_millisecond

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
class SystemActor:
    """The service itself as the one who made the change, by name (``clock``): shown to
    everyone who sees the event as ``{"system": name}``."""

    system: str


@dataclass(frozen=True, slots=True)
class EventContext:
    """Where, when, by whom and under which write an event happened: what every builder
    takes besides what changed. ``change_id`` is the write's own id, the same when a retry
    rebuilds the write, so the event's id is too. ``actor`` None: the service itself (a
    report, a scheduled pass)."""

    node_id: str
    owner_org_id: str
    change_id: str
    at: datetime
    actor: Actor | SystemActor | None = None


@dataclass(frozen=True, slots=True)
class CloudEvent:
    """One event. ``data`` is JSON-ready and holds no ``actor``: the envelope adds it."""

    id: str
    type: str  # one of the contract's event types (each slice names its own)
    node_id: str
    subject: str
    time: datetime
    data: Mapping[str, Any]
    actor: Actor | SystemActor | None = None

    def envelope(self, show_key_id: bool) -> dict[str, Any]:
        """The CloudEvents 1.0 JSON form; ``actor.keyId`` only when ``show_key_id``."""
        data: dict[str, Any] = {}
        if isinstance(self.actor, SystemActor):
            data["actor"] = {"system": self.actor.system}
        elif self.actor is not None:
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
            actor=_actor(actor),
        )


def _actor(stored: Mapping[str, str] | None) -> Actor | SystemActor | None:
    if not stored:
        return None
    if "system" in stored:
        return SystemActor(stored["system"])
    return Actor(stored["orgId"], stored["keyId"])


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
    in the feed it was read from (None until it is stored; ``kernel.event_log``).
    ``views``: orgs of its audience that see a reduced ``data`` instead of the event's (an
    org a change no longer names sees only what concerns it), each with that ``data``;
    the operator and the node's owner always see the whole event."""

    event: CloudEvent
    owner_org_id: str
    audience_org_ids: frozenset[str] = frozenset()
    expires_at: datetime | None = None
    review: Derivation | None = None
    position: str | None = None
    views: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.event.id

    def seen_by(self, org_id: str | None) -> CloudEvent:
        """The event as ``org_id`` sees it: its reduced view, if it has one and is not the
        node's owner; otherwise (and for None: the operator, the bus) the whole event."""
        view = None if org_id is None or org_id == self.owner_org_id else self.views.get(org_id)
        return self.event if view is None else replace(self.event, data=view)

    def views_json(self) -> str | None:
        """The reduced views as stored with the event (None: it has none)."""
        if not self.views:
            return None
        return json.dumps(dict(sorted(self.views.items())), separators=(",", ":"))


def views_from_json(text: str | None) -> dict[str, Mapping[str, Any]]:
    """What :meth:`StoredEvent.views_json` wrote."""
    return {} if not text else {str(org): dict(data) for org, data in json.loads(text).items()}


class EventType(StrEnum):
    """The base of every slice's event types: a slice names the types it builds in a
    ``StrEnum`` of its own below this one, next to its builders (``<slice>/rules/events.py``),
    each value a type of the contract's table, and declares them
    (:func:`declare_event_types`)."""


# Every event type declared so far, with the class that declares it: filled as each slice's
# builders are imported; only what imports every slice (the table of contents, the tests)
# sees every type. The contract's list, in its order, is the feeds' (``events``).
EVENT_TYPES: dict[str, type[EventType]] = {}

_Types = TypeVar("_Types", bound=type[EventType])


def declare_event_types(types: _Types) -> _Types:
    """Class decorator: a slice's event types into :data:`EVENT_TYPES`; a type another class
    declared already is a TypeError (each type is built by one slice)."""
    for event_type in types:
        declared = EVENT_TYPES.setdefault(event_type.value, types)
        if declared is not types:
            raise TypeError(
                f"{types.__qualname__}: {event_type.value} is {declared.__qualname__}'s"
            )
    return types


EVENT_ID_PREFIX = "evt-"
_ID_LENGTH = 26  # base32 characters: 130 bits of the digest


def event_id(node_id: str, change_id: str, event_type: str, subject: str) -> str:
    """``evt-`` and 26 lower-case base32 characters of a SHA-256 over what identifies the
    event: the same inputs, the same id."""
    digest = hashlib.sha256(
        "\x00".join((node_id, change_id, event_type, subject)).encode()
    ).digest()
    return EVENT_ID_PREFIX + base64.b32encode(digest).decode().lower()[:_ID_LENGTH]


def present(data: Mapping[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in data.items() if value is not None}


def new_event(
    context: EventContext,
    event_type: str,
    subject: str,
    data: Mapping[str, Any],
    audience_org_ids: Iterable[str],
) -> StoredEvent:
    event = CloudEvent(
        id=event_id(context.node_id, context.change_id, event_type, subject),
        type=event_type,
        node_id=context.node_id,
        subject=subject,
        time=to_millisecond(context.at),
        data=present(data),
        actor=context.actor,
    )
    return StoredEvent(event, context.owner_org_id, frozenset(audience_org_ids))


def optional_time(moment: datetime | None) -> str | None:
    return format_time(moment) if moment is not None else None
