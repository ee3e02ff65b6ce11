"""A node's usage as a fold of its events (pure): each unit's states over time, as
intervals in integer milliseconds, from the node's first moment (registered, or loaded) up
to a watermark ``as_of``.

The fold keeps what decides a unit's state (``rules/states.py``): the node's units (with
their ``sellableGpus`` and the generation each last changed at), its live reservations as
``nodes`` models them (their effective status and who governs a unit are the same rules
every endpoint reads: ``effective_status``, ``in_term``, the placement table's), and its
workloads (tier, units, terminating or not, what a waiting one waits on). After the events
of each millisecond, and at each clock moment between them (a ``startsAt`` or ``endsAt``
exactly: a reservation's effective status changes there with no event needed), it reads
every unit's state; a unit's interval ends where its state, its governing reservation or
its GPUs change.

A unit is claimed by each live workload that names it, except a unit a waiting workload
holds: while a workload it waits on still claims that unit, the waiting one holds it
(``claimed or held``), and claims it once that one is gone or the wait ends. So the claims
follow from the live workloads alone, whichever order the events of one millisecond are
applied in."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from reservations.kernel.times import parse_time
from reservations.nodes import Reservation, ReservationStatus, effective_status, in_term
from reservations.usage.rules.facts import NODE_LOADED, Fact, facts, from_ms, to_ms
from reservations.usage.rules.states import (
    Claim,
    Situation,
    UsageState,
    governs,
    state_of,
    strongest,
)


@dataclass(frozen=True, slots=True)
class Interval:
    """A unit in one state over ``[start, end)`` (ms), governed by ``reservation_id`` (None:
    by no reservation), with ``gpus`` sellable GPUs."""

    unit_id: str
    start: int
    end: int
    state: UsageState
    reservation_id: str | None
    gpus: int

    @property
    def ms(self) -> int:
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class Gap:
    """What an event did not say that the fold needed, and what the fold took instead."""

    event_id: str
    what: str


@dataclass(frozen=True, slots=True)
class NodeLedger:
    """A node's units' intervals, by unit then start, counted up to ``as_of``; ``first``:
    the node's first moment (None: not registered or loaded before ``as_of``)."""

    node_id: str
    as_of: int
    first: int | None
    intervals: tuple[Interval, ...]
    gaps: tuple[Gap, ...] = ()


@dataclass(frozen=True, slots=True)
class Workload:
    """A live workload as the fold keeps it: its tier and units, whether it is terminating,
    and the workloads a take-back's waits on."""

    tier: str
    unit_ids: frozenset[str]
    terminating: bool = False
    waiting_for: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class _Generations:
    """Each unit with the generation it last changed at, as ``effective_status`` reads it."""

    unit_changed_at: Mapping[str, int] | None


@dataclass
class _Node:
    """The fold's node so far (its own, mutable: nothing outside the fold sees it)."""

    node_id: str
    first: int | None = None
    topology_gen: int | None = None
    gpus: dict[str, int] = field(default_factory=dict)
    generations: dict[str, int] = field(default_factory=dict)
    reservations: dict[str, Reservation] = field(default_factory=dict)
    workloads: dict[str, Workload] = field(default_factory=dict)
    gaps: list[Gap] = field(default_factory=list)


# A unit's value at an instant: its state, its governing reservation, its GPUs.
Value = tuple[UsageState, str | None, int]


@dataclass(frozen=True, slots=True)
class _Open:
    start: int
    value: Value


@dataclass(frozen=True, slots=True)
class Carried:
    """The fold carried to the instant ``at`` (ms): the node as every event before ``at``
    left it (the clock's moments before it passed too), and each unit's interval open at
    ``at``, with its start. Folding the events at or after ``at`` on from it gives exactly
    the intervals the whole history gives from ``at`` on (``tests/usage``): what a stored
    checkpoint lets a read skip, the node's past before it."""

    node_id: str
    at: int
    first: int | None
    topology_gen: int | None
    gpus: Mapping[str, int]
    generations: Mapping[str, int]
    reservations: tuple[Reservation, ...]
    workloads: Mapping[str, Workload]
    opened: Mapping[str, tuple[int, Value]]
    gaps: tuple[Gap, ...] = ()


def fold(
    node_id: str,
    events: Iterable[Mapping[str, Any]],
    as_of: int,
    since: Carried | None = None,
) -> NodeLedger:
    """The node's ledger from its events (any order, any repeats) up to ``as_of`` (ms):
    an event at or after ``as_of`` is not counted yet. From ``since`` (a fold carried to
    an instant before ``as_of``), only the events at or after its instant are read, and
    the ledger holds the intervals that end after it."""
    node, opened, closed = _run(node_id, events, as_of, since)
    closed += (_interval(unit, o, as_of) for unit, o in opened.items())
    intervals = sorted(closed, key=lambda i: (i.unit_id, i.start))
    return NodeLedger(node_id, as_of, node.first, tuple(intervals), tuple(node.gaps))


def carry(
    node_id: str,
    events: Iterable[Mapping[str, Any]],
    at: int,
    since: Carried | None = None,
) -> Carried:
    """The fold carried to ``at``: what a checkpoint at ``at`` keeps (from ``since``, an
    earlier one, and the events from its instant on)."""
    node, opened, _ = _run(node_id, events, at, since)
    return Carried(
        node_id=node_id,
        at=at,
        first=node.first,
        topology_gen=node.topology_gen,
        gpus=dict(node.gpus),
        generations=dict(node.generations),
        reservations=tuple(node.reservations[r] for r in sorted(node.reservations)),
        workloads=dict(node.workloads),
        opened={unit_id: (o.start, o.value) for unit_id, o in opened.items()},
        gaps=tuple(node.gaps),
    )


def _run(
    node_id: str, events: Iterable[Mapping[str, Any]], until: int, since: Carried | None
) -> tuple[_Node, dict[str, _Open], list[Interval]]:
    """The fold's loop up to ``until``: after the events of each millisecond, and at each
    clock moment between them, every unit's value is read (from ``since``'s instant, read
    there first, as the whole fold would have gone on from it)."""
    node, opened, start = _resumed(since) if since is not None else (_Node(node_id), {}, None)
    if start is not None and start >= until:
        raise ValueError("a fold carried to an instant goes on only past it")
    timeline = [
        fact
        for fact in facts(node_id, events)
        if fact.at < until and (start is None or fact.at >= start)
    ]
    moments = sorted({fact.at for fact in timeline} | ({start} if start is not None else set()))
    by_moment: dict[int, list[Fact]] = defaultdict(list)
    for fact in timeline:
        by_moment[fact.at].append(fact)
    closed: list[Interval] = []
    for index, at in enumerate(moments):
        for fact in by_moment[at]:
            _APPLY.get(fact.type, _unused)(node, fact)
        after = moments[index + 1] if index + 1 < len(moments) else until
        for moment in (at, *_clock_moments(node, at, after)):
            _mark(node, moment, opened, closed)
    return node, opened, closed


def _resumed(since: Carried) -> tuple[_Node, dict[str, _Open], int]:
    node = _Node(
        node_id=since.node_id,
        first=since.first,
        topology_gen=since.topology_gen,
        gpus=dict(since.gpus),
        generations=dict(since.generations),
        reservations={r.id: r for r in since.reservations},
        workloads=dict(since.workloads),
        gaps=list(since.gaps),
    )
    opened = {unit_id: _Open(start, value) for unit_id, (start, value) in since.opened.items()}
    return node, opened, since.at


def _interval(unit_id: str, opened: _Open, end: int) -> Interval:
    state, reservation_id, gpus = opened.value
    return Interval(unit_id, opened.start, end, state, reservation_id, gpus)


def _clock_moments(node: _Node, after: int, before: int) -> list[int]:
    """The terms' moments strictly between two instants of events: where an effective
    status may change by the clock alone."""
    found: set[int] = set()
    for reservation in node.reservations.values():
        for moment in (reservation.starts_at, reservation.ends_at):
            if moment is not None and after < (ms := to_ms(moment)) < before:
                found.add(ms)
    return sorted(found)


def _mark(node: _Node, at: int, opened: dict[str, _Open], closed: list[Interval]) -> None:
    """Every unit's value at ``at``: the intervals whose value changed (or whose unit left
    the node) end there, and new ones start."""
    values = _values(node, at)
    for unit_id, was in list(opened.items()):
        if values.get(unit_id) != was.value:
            closed.append(_interval(unit_id, was, at))
            del opened[unit_id]
    for unit_id, value in values.items():
        if unit_id not in opened:
            opened[unit_id] = _Open(at, value)


def _values(node: _Node, at: int) -> dict[str, Value]:
    governing = _governing(node, at)
    claims = _claims(node)
    values: dict[str, Value] = {}
    for unit_id, gpus in node.gpus.items():
        governor = governing.get(unit_id)
        situation = Situation(
            governor=governor[1] if governor else None,
            released=governor is not None and unit_id in governor[0].released_unit_ids,
            claim=strongest(claims.get(unit_id, ())),
        )
        values[unit_id] = (state_of(situation), governor[0].id if governor else None, gpus)
    return values


_ENDED = frozenset({ReservationStatus.EXPIRED, ReservationStatus.CANCELLED})


def _governing(node: _Node, at: int) -> dict[str, tuple[Reservation, ReservationStatus]]:
    """Each governed unit with the reservation that governs it and its effective status;
    several: the first by id, as placement takes it. A reservation ended by now never
    governs again: it leaves the fold (which so keeps only the live ones)."""
    now, generations = from_ms(at), _Generations(node.generations)
    governing: dict[str, tuple[Reservation, ReservationStatus]] = {}
    for reservation_id in sorted(node.reservations):
        reservation = node.reservations[reservation_id]
        status = effective_status(reservation, generations, now)
        if status in _ENDED:
            del node.reservations[reservation_id]
        elif governs(status, in_term(reservation, now)):
            for unit_id in reservation.reserved_unit_ids:
                governing.setdefault(unit_id, (reservation, status))
    return governing


def _claims(node: _Node) -> dict[str, list[Claim]]:
    claims: dict[str, list[Claim]] = defaultdict(list)
    for workload in node.workloads.values():
        waited = {
            unit_id
            for other_id in workload.waiting_for
            if (other := node.workloads.get(other_id)) is not None
            for unit_id in other.unit_ids
        }
        for unit_id in workload.unit_ids:
            claims[unit_id].append(Claim.OTHER if unit_id in waited else _claim(workload))
    return claims


def _claim(workload: Workload) -> Claim:
    if workload.tier != "spot":
        return Claim.OTHER
    return Claim.RECLAIMING if workload.terminating else Claim.SPOT


# How each event changes the fold's node.


def _unused(node: _Node, fact: Fact) -> None:
    """An event that changes no unit's state (an expiring warning, a stuck termination),
    one the clock's moments already stand for (activated, expired: ``_clock_moments``), or
    a review a node update derives (``needs_review``: the update's own event changed the
    units' generations, from which ``effective_status`` derives the review at the update's
    moment). The last two are recorded after their moment (the clock's pass, the relay),
    so a checkpoint made before they are recorded must not need them, and does not."""


def _registered(node: _Node, fact: Fact) -> None:
    """The node's units as registered, none changed since anything was sold (0)."""
    node.gpus, node.generations = {}, {}
    node.topology_gen = fact.data.get("topologyGen")
    _set_units(node, fact, fact.data.get("addedUnitIds", ()), 0)
    node.first = fact.at if node.first is None else node.first


def _updated(node: _Node, fact: Fact) -> None:
    """Units removed leave; units added or changed take the update's generation."""
    for unit_id in fact.data.get("removedUnitIds", ()):
        node.gpus.pop(unit_id, None)
        node.generations.pop(unit_id, None)
    node.topology_gen = fact.data.get("topologyGen")
    generation = int(node.topology_gen or 0)
    touched = (*fact.data.get("addedUnitIds", ()), *fact.data.get("changedUnitIds", ()))
    _set_units(node, fact, touched, generation)


def _set_units(node: _Node, fact: Fact, unit_ids: Iterable[str], generation: int) -> None:
    """Units with their GPUs as the event gives them (``data.units``: each added or changed
    unit's ``id`` and ``sellableGpus``, which the node's events do not carry yet): one it
    does not give keeps the GPUs it had, or counts 0, and the gap is said."""
    given = {str(u["id"]): int(u["sellableGpus"]) for u in fact.data.get("units", ())}
    for unit_id in unit_ids:
        if unit_id not in given:
            node.gaps.append(Gap(fact.id, f"sellableGpus of unit {unit_id}"))
        node.gpus[unit_id] = given.get(unit_id, node.gpus.get(unit_id, 0))
        node.generations[unit_id] = generation


def _loaded(node: _Node, fact: Fact) -> None:
    """A fleet file's node object, as loaded: the node's whole state from that moment."""
    data = fact.data
    node.gpus = {str(u["id"]): int(u["sellableGpus"]) for u in data.get("units", ())}
    node.generations = dict.fromkeys(node.gpus, 0)
    node.topology_gen = data.get("topologyGen")
    node.reservations = {
        str(r["id"]): _reservation(node, fact, r) for r in data.get("reservations", ())
    }
    node.workloads = {
        str(w["id"]): Workload(
            tier=str(w["tier"]),
            unit_ids=frozenset(w["unitIds"]),
            terminating=w.get("state") == "terminating",
        )
        for w in data.get("workloads", ())
        if w.get("state", "running") in ("running", "terminating")
    }
    node.first = fact.at if node.first is None else node.first


def _reservation(node: _Node, fact: Fact, data: Mapping[str, Any]) -> Reservation:
    """A reservation as a create (or a fleet file) states it."""
    ends_at = data.get("endsAt")
    return Reservation(
        id=str(data.get("id") or fact.about),
        node_id=node.node_id,
        status=ReservationStatus(data["status"]),
        starts_at=parse_time(data["startsAt"]),
        created_at=from_ms(fact.at),
        updated_at=from_ms(fact.at),
        ends_at=parse_time(ends_at) if ends_at else None,
        reserved_unit_ids=tuple(data.get("unitIds") or data.get("reservedUnitIds") or ()),
        released_unit_ids=tuple(data.get("releasedUnitIds") or ()),
        topology_gen=data.get("topologyGen"),
    )


def _created(node: _Node, fact: Fact) -> None:
    node.reservations[fact.about] = _reservation(node, fact, fact.data)


def _changing(
    change: Callable[[_Node, Reservation, Mapping[str, Any]], Reservation],
) -> Callable[[_Node, Fact], None]:
    """An event on one reservation: ``change`` applied to it, if the fold still has it (a
    reservation that ended has left it, and nothing brings it back)."""

    def apply(node: _Node, fact: Fact) -> None:
        reservation = node.reservations.get(fact.about)
        if reservation is not None:
            node.reservations[fact.about] = change(node, reservation, fact.data)

    return apply


def _patched(node: _Node, reservation: Reservation, data: Mapping[str, Any]) -> Reservation:
    """A PATCH: each field of ``data.changes`` that a unit's state depends on takes its
    ``to``; a unit removed leaves ``releasedUnitIds`` too; a unit added is sold on the
    node's topology as it is then (the reservation takes the node's generation, which the
    event does not say: ``lifecycle/rules/update.py`` does so)."""
    changes = data.get("changes") or {}
    fields: dict[str, Any] = {}
    if "startsAt" in changes:
        fields["starts_at"] = parse_time(changes["startsAt"]["to"])
    if "endsAt" in changes:
        ends_at = changes["endsAt"]["to"]
        fields["ends_at"] = parse_time(ends_at) if ends_at else None
    reserved = tuple(changes.get("reservedUnitIds", {}).get("to", reservation.reserved_unit_ids))
    released = changes.get("releasedUnitIds", {}).get("to", reservation.released_unit_ids)
    fields["reserved_unit_ids"] = reserved
    if set(reserved) - set(reservation.reserved_unit_ids):
        fields["topology_gen"] = node.topology_gen
    fields["released_unit_ids"] = tuple(u for u in released if u in reserved)
    return replace(reservation, **fields)


def _lent(node: _Node, reservation: Reservation, data: Mapping[str, Any]) -> Reservation:
    """A release or a reclaim (a take-back too): what stays released after it."""
    return replace(reservation, released_unit_ids=tuple(data.get("releasedUnitIds") or ()))


def _reclaimed(node: _Node, fact: Fact) -> None:
    """A reclaim (a take-back too): what stays released, and the spot workloads it
    terminates are terminating from its commit (each one's ``termination_requested`` says
    so too, at the same moment)."""
    _changing(_lent)(node, fact)
    for workload_id in fact.data.get("terminated") or ():
        _terminating(node, replace(fact, about=str(workload_id)))


def _cancelled(node: _Node, reservation: Reservation, data: Mapping[str, Any]) -> Reservation:
    return replace(reservation, status=ReservationStatus.CANCELLED, released_unit_ids=())


def _reaffirmed(node: _Node, reservation: Reservation, data: Mapping[str, Any]) -> Reservation:
    """Re-affirmed: the node's generation, the stored status it takes, nothing released."""
    return replace(
        reservation,
        status=ReservationStatus(data.get("status", ReservationStatus.ACTIVE)),
        topology_gen=data.get("topologyGen", reservation.topology_gen),
        reserved_unit_ids=tuple(data.get("unitIds") or reservation.reserved_unit_ids),
        released_unit_ids=(),
    )


def _placed(node: _Node, fact: Fact) -> None:
    """A workload placed: it claims its units, or holds those the workloads it waits on
    (``data.waitingFor``, a take-back's) still claim."""
    waiting = fact.data.get("waitingFor") or ()
    node.workloads[fact.about] = Workload(
        tier=str(fact.data.get("tier", "")),
        unit_ids=frozenset(fact.data.get("unitIds", ())),
        waiting_for=frozenset(_workload_id(w) for w in waiting),
    )


def _workload_id(waited: str | Mapping[str, Any]) -> str:
    if isinstance(waited, str):
        return waited
    return str(waited.get("workloadId") or waited.get("id"))


def _terminating(node: _Node, fact: Fact) -> None:
    workload = node.workloads.get(fact.about)
    if workload is not None:
        node.workloads[fact.about] = replace(workload, terminating=True)


def _started(node: _Node, fact: Fact) -> None:
    workload = node.workloads.get(fact.about)
    if workload is not None:
        node.workloads[fact.about] = replace(workload, waiting_for=frozenset())


def _gone(node: _Node, fact: Fact) -> None:
    """Ended, or reported stopped: its units are free (or handed to who waited on them)."""
    node.workloads.pop(fact.about, None)


_APPLY: dict[str, Callable[[_Node, Fact], None]] = {
    NODE_LOADED: _loaded,
    "node.registered": _registered,
    "node.updated": _updated,
    "reservation.created": _created,
    "reservation.updated": _changing(_patched),
    "reservation.released": _changing(_lent),
    "reservation.reclaimed": _reclaimed,
    "reservation.cancelled": _changing(_cancelled),
    "reservation.reaffirmed": _changing(_reaffirmed),
    "workload.placed": _placed,
    "workload.termination_requested": _terminating,
    "workload.started": _started,
    "workload.terminated": _gone,
    "workload.ended": _gone,
}


def folds(event_type: str) -> bool:
    """Whether the fold reads events of this type (the others change no unit's state, or
    stand for what the fold finds itself)."""
    return event_type in _APPLY
