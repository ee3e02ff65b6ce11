"""A node's events as the usage fold reads them (pure): the CloudEvents-shaped dicts a feed
carries (``id``, ``type``, ``time``, ``subject``, ``data``; ``source`` names the node),
each taken once by its ``id`` and put in ``time`` order, at integer milliseconds.

Ties (events at the same millisecond) are broken by what the event does, then by its id,
never by the order they were delivered in, so a feed replayed, relayed twice or pushed out
of order folds the same: the node and its units first, then reservations as made, their
changes, what they lend and take back, then placements, terminations asked, waits ended,
and last what frees a unit (the events of one write commute; the order only decides
between writes that committed in the same millisecond)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from reservations.kernel.envelope import SOURCE_PREFIX
from reservations.kernel.times import parse_time

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)

# A node's state as the fleet file states it (its node object: units, reservations,
# workloads), recorded by the loader at the load's moment. Not an event of the contract (a
# load makes none): the usage's own fact, which the fold reads as a node's whole state.
NODE_LOADED = "node.loaded"

_RANK = {
    NODE_LOADED: 0,
    "node.registered": 0,
    "node.updated": 1,
    "reservation.created": 2,
    "reservation.updated": 3,
    "reservation.reaffirmed": 3,
    "reservation.needs_review": 3,
    "reservation.cancelled": 3,
    "reservation.activated": 3,
    "reservation.expiring": 3,
    "reservation.expired": 3,
    "reservation.released": 4,
    "reservation.reclaimed": 4,
    "workload.placed": 5,
    "workload.termination_requested": 6,
    "workload.started": 7,
    "workload.terminated": 8,
    "workload.ended": 8,
}
# Types the fold has no use for still count once and in order; they change nothing.
_UNUSED = len(set(_RANK.values()))


def to_ms(moment: datetime) -> int:
    """Integer milliseconds since the Unix epoch (a finer part is cut)."""
    return (moment - EPOCH) // _MS


def from_ms(ms: int) -> datetime:
    return EPOCH + ms * _MS


def text_ms(text: str) -> int:
    """An RFC 3339 time (an event's ``time``, a ``startsAt``) in integer milliseconds."""
    return to_ms(parse_time(text))


@dataclass(frozen=True, slots=True)
class Fact:
    """One event as the fold applies it: its moment, its tie-break, what it is about (the
    id in its ``subject``) and its ``data``."""

    at: int
    rank: int
    id: str
    type: str
    about: str
    data: Mapping[str, Any]


def facts(node_id: str, events: Iterable[Mapping[str, Any]]) -> list[Fact]:
    """The node's events, each once (the first with its id), in ``time`` order and ties
    broken as the module says. An event of another node (by ``source``) is left out."""
    seen: dict[str, Fact] = {}
    for event in events:
        source = event.get("source")
        if source is not None and source != SOURCE_PREFIX + node_id:
            continue
        if event["id"] not in seen:
            seen[event["id"]] = _fact(event)
    return sorted(seen.values(), key=lambda f: (f.at, f.rank, f.id))


def _fact(event: Mapping[str, Any]) -> Fact:
    kind = str(event["type"])
    subject = str(event.get("subject") or "")
    return Fact(
        at=text_ms(event["time"]),
        rank=_RANK.get(kind, _UNUSED),
        id=str(event["id"]),
        type=kind,
        about=subject.partition("/")[2],
        data=event.get("data") or {},
    )
