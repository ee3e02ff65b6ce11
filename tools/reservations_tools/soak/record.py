"""What the auditor reads: a run's record, as JSON.

```json
{"seed": 7,
 "recordedAt": "2031-03-03T09:00:00Z",
 "nodes": {"node-a": [<events as GET /v1/nodes/node-a/events serves them, every page>]},
 "followers": {"operator-feed": ["evt-…", …], "bus": ["evt-…", …]},
 "calls": [{"call": "c-1", "actor": "broker", "op": "reclaim", "status": 503,
            "retryAfter": "2", "ms": 41.2}, …],
 "usage": [<rows as GET /v1/usage answers them, every page, by node and by reservation>],
 "followedUntil": "2031-03-03T08:59:30Z",
 "owed": {"webhook": {"evt-…": {"state": "pending", "nextAttemptAt": "2031-03-03T09:25:00Z"}}}}
```

Every part but ``nodes`` may be absent. ``calls`` holds one entry per attempt: the attempts
of one logical call share its ``call`` id (a retry is the same call). ``recordedAt`` is when
the feeds were read: a termination due less than a grace before it may still be in flight.
``followedUntil`` (optional): the followers are judged on the feeds' events up to that
``time``, which they were given time to catch up with; an id of a later event of the feeds
is neither missing nor extra (a live stack's clock writes events after its actors stop).
``owed`` (optional): for a follower the service delivers to on a schedule of its own (the
webhook receiver), the delivery of each event it had not received when the record was
taken, as ``GET /v1/webhooks/{id}/deliveries/{eventId}`` answered (``state``,
``nextAttemptAt``, ``attemptCount``, ``lastAttemptAt``; ``{}`` for a delivery the service
does not know).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_ms(text: str) -> int:
    """An RFC 3339 time in integer milliseconds since the epoch (a finer part is cut)."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return (moment - EPOCH) // timedelta(milliseconds=1)


def from_ms(ms: int) -> str:
    """Integer milliseconds as an event's time: RFC 3339 UTC, to the millisecond."""
    moment = EPOCH + timedelta(milliseconds=ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


@dataclass(frozen=True)
class Event:
    """One event of a node's feed as the auditor reads it: its id, type, moment (``time``,
    in ms), the node whose feed holds it, the id its ``subject`` names and its ``data``."""

    id: str
    type: str
    at: int
    node: str
    about: str
    data: Mapping[str, Any]

    @classmethod
    def of(cls, node: str, envelope: Mapping[str, Any]) -> Event:
        subject = str(envelope.get("subject") or "")
        return cls(
            id=str(envelope["id"]),
            type=str(envelope["type"]),
            at=to_ms(str(envelope["time"])),
            node=node,
            about=subject.rsplit("/", 1)[-1],
            data=envelope.get("data") or {},
        )

    def units(self) -> list[str]:
        return [str(u) for u in self.data.get("unitIds") or ()]


@dataclass(frozen=True)
class Call:
    """One attempt of one call: ``call`` names the logical call its retries share."""

    call: str
    op: str
    status: int
    retry_after: str | None = None
    actor: str = ""
    ms: float | None = None


@dataclass
class Record:
    """A run's record (see the module's docstring)."""

    nodes: dict[str, list[Event]]
    followers: dict[str, list[str]] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    usage: list[Mapping[str, Any]] = field(default_factory=list)
    seed: int | str | None = None
    recorded_at: int | None = None
    followed_until: int | None = None
    owed: dict[str, dict[str, Mapping[str, Any]]] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        feeds: Mapping[str, Iterable[Mapping[str, Any]]],
        followers: Mapping[str, Iterable[str]] | None = None,
        calls: Iterable[Mapping[str, Any]] = (),
        usage: Iterable[Mapping[str, Any]] = (),
        seed: int | str | None = None,
        recorded_at: str | None = None,
        followed_until: str | None = None,
        owed: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
    ) -> Record:
        """A record from the JSON shapes: the feeds' CloudEvents, each follower's ids, each
        attempt's ``{"call", "op", "status", "retryAfter"?, "actor"?, "ms"?}``."""
        return cls(
            nodes={node: [Event.of(node, e) for e in events] for node, events in feeds.items()},
            followers={name: [str(i) for i in ids] for name, ids in (followers or {}).items()},
            calls=[_call(c) for c in calls],
            usage=list(usage),
            seed=seed,
            recorded_at=to_ms(recorded_at) if recorded_at else None,
            followed_until=to_ms(followed_until) if followed_until else None,
            owed={name: dict(deliveries) for name, deliveries in (owed or {}).items()},
        )


def _call(entry: Mapping[str, Any]) -> Call:
    after = entry.get("retryAfter")
    return Call(
        call=str(entry["call"]),
        op=str(entry.get("op", "")),
        status=int(entry["status"]),
        retry_after=None if after is None else str(after),
        actor=str(entry.get("actor", "")),
        ms=None if entry.get("ms") is None else float(entry["ms"]),
    )


def record_of(document: Mapping[str, Any]) -> Record:
    """A record from its JSON document (the module's docstring)."""
    return Record.of(
        document.get("nodes") or {},
        document.get("followers"),
        document.get("calls") or (),
        document.get("usage") or (),
        document.get("seed"),
        document.get("recordedAt"),
        document.get("followedUntil"),
        document.get("owed"),
    )


def load_record(path: Path) -> Record:
    """A record from its JSON file."""
    return record_of(json.loads(path.read_text()))
