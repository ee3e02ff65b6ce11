"""A node's events replayed in time order, with the auditor's own reading of the contract
(docs/api.md): which reservation governs a unit and whether it lends it, and which
workload claims it. Two invariants are judged on the way, at the moment of each event:

- **claims**: no unit is claimed by two workloads at once (a take-back's waiting workload
  only holds a unit that a spot workload it waits on still claims);
- **lent**: a spot workload is placed only where the contract's placement table lets spot
  work run: on a unit its governing reservation has released, or that no reservation
  governs now (a unit governed by an active reservation that has not lent it, or by one
  under review, is withheld; the reservation's audience may run anything on its own units).

**Order.** Each event is taken once (by its ``id``), in ``time`` order; events of one
millisecond are applied node first, then reservations, then what they lend and take back,
then what frees a unit, then placements, starts and termination requests (the events of one
write commute; a write's frees come before another write's claims in the same millisecond,
which could only have committed after them). A spot placement in the same millisecond as a
change of what its units' reservation lends is judged against the lending before and after
that change, and breaks the invariant only if neither lent the unit.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

from reservations_tools.soak.outcomes import Outcome, around
from reservations_tools.soak.record import Event, to_ms

ORDER = {
    "node.registered": 0,
    "node.updated": 1,
    "reservation.created": 2,
    "reservation.updated": 3,
    "reservation.reaffirmed": 3,
    "reservation.needs_review": 3,
    "reservation.cancelled": 3,
    "reservation.released": 4,
    "reservation.reclaimed": 4,
    "workload.ended": 5,
    "workload.terminated": 5,
    "workload.placed": 6,
    "workload.started": 7,
    "workload.termination_requested": 8,
}
LATER = 9  # types the replay has no use for (the clock's, a stuck termination): in order
RESERVATION_TYPES = {t for t, rank in ORDER.items() if 2 <= rank <= 4}
NEVER = 2**62  # an open end


def ordered(events: Iterable[Event]) -> list[Event]:
    """Each event once (the first copy of its id), in time order, ties as the module says."""
    unique: dict[str, Event] = {}
    for event in events:
        unique.setdefault(event.id, event)
    return sorted(unique.values(), key=lambda e: (e.at, ORDER.get(e.type, LATER), e.id))


@dataclass
class Reservation:
    """What governance needs of a reservation, as its events stated it."""

    units: set[str]
    starts: int
    ends: int
    allowed: set[str] = field(default_factory=set)
    released: set[str] = field(default_factory=set)
    cancelled: bool = False
    review: bool = False

    def governs(self, unit: str, at: int) -> bool:
        """Active inside its term, or under review until its end."""
        inside = self.starts <= at < self.ends or (self.review and at < self.ends)
        return unit in self.units and not self.cancelled and inside

    def lends_to(self, unit: str, org: str) -> str:
        """Whether a spot workload of ``org`` may run on the unit it governs, and why."""
        if self.review:
            return "withheld"
        if unit in self.released:
            return "lent"
        return "audience" if org in self.allowed else "withheld"


@dataclass
class Live:
    """A workload on the node: its units and, while it waits, whom it waits for."""

    event: Event
    units: list[str]
    waiting_for: set[str] = field(default_factory=set)


def _time(value: Any, default: int) -> int:
    return to_ms(str(value)) if value else default


def _ids(value: Any) -> set[str]:
    return {str(v) for v in value or ()}


class Governance:
    """The node's reservations, by their events; which one governs a unit, and how."""

    def __init__(self) -> None:
        self.reservations: dict[str, Reservation] = {}

    def apply(self, event: Event) -> None:
        data, found = event.data, self.reservations.get(event.about)
        if event.type == "reservation.created":
            self.reservations[event.about] = Reservation(
                units=_ids(data.get("unitIds")),
                starts=_time(data.get("startsAt"), event.at),
                ends=_time(data.get("endsAt"), NEVER),
                allowed=_ids(data.get("allowedOrgIds")),
            )
            return
        if found is None:  # from before the record (a fleet file's): as its events state it
            found = self.reservations[event.about] = Reservation(set(event.units()), 0, NEVER)
        _change(found, event)

    def spot_on(self, unit: str, org: str, at: int) -> str:
        """``lent``, ``audience``, ``withheld`` (by the first governing reservation by id,
        as placement takes it) or ``open`` (nothing governs it)."""
        governing = [
            self.reservations[rid]
            for rid in sorted(self.reservations)
            if self.reservations[rid].governs(unit, at)
        ]
        return governing[0].lends_to(unit, org) if governing else "open"


def _change(reservation: Reservation, event: Event) -> None:
    data = event.data
    if event.type in ("reservation.released", "reservation.reclaimed"):
        reservation.released = _ids(data.get("releasedUnitIds"))
    elif event.type == "reservation.cancelled":
        reservation.cancelled = True
    elif event.type == "reservation.needs_review":
        reservation.review = True
    elif event.type == "reservation.reaffirmed":
        reservation.review, reservation.released = False, set()
    elif event.type == "reservation.updated":
        _patch(reservation, data.get("changes") or {})


def _patch(reservation: Reservation, changes: Mapping[str, Any]) -> None:
    def to(name: str) -> Any:
        return (changes.get(name) or {}).get("to")

    if "startsAt" in changes:
        reservation.starts = _time(to("startsAt"), reservation.starts)
    if "endsAt" in changes:
        reservation.ends = _time(to("endsAt"), NEVER)
    if "allowedOrgIds" in changes and not changes["allowedOrgIds"].get("removed"):
        reservation.allowed = _ids(to("allowedOrgIds"))
    if "reservedUnitIds" in changes:
        reservation.units = _ids(to("reservedUnitIds"))
    if "releasedUnitIds" in changes:
        reservation.released = _ids(to("releasedUnitIds"))


class NodeReplay:
    """One node's events, replayed; the claims and lending invariants judged on the way."""

    def __init__(self, events: Sequence[Event], claims: Outcome, lent: Outcome) -> None:
        self.events = ordered(events)
        self.claims, self.lent = claims, lent
        self.governance = Governance()
        self.claimed: dict[str, str] = {}  # unit -> the workload claiming it
        self.held: dict[str, str] = {}  # unit -> the waiting workload it is held for
        self.live: dict[str, Live] = {}
        self.placements: dict[str, list[Event]] = {}  # workload -> its placements, in order
        self.done: list[Event] = []

    def run(self) -> NodeReplay:
        for _, moment in groupby(self.events, key=lambda e: e.at):
            self._moment(list(moment))
        return self

    def _moment(self, events: list[Event]) -> None:
        lending_changes = any(e.type in RESERVATION_TYPES for e in events)
        before = copy.deepcopy(self.governance) if lending_changes else None
        for event in events:
            self._apply(event, before)
            self.done.append(event)

    def _apply(self, event: Event, before: Governance | None) -> None:
        if event.type in RESERVATION_TYPES:
            self.governance.apply(event)
        elif event.type == "workload.placed":
            self._placed(event, before)
        elif event.type in ("workload.ended", "workload.terminated"):
            self._left(event)
        elif event.type == "workload.started":
            self._started(event)
        elif event.type == "node.updated":
            self._units_removed(event)

    def _placed(self, event: Event, before: Governance | None) -> None:
        self.placements.setdefault(event.about, []).append(event)
        if event.data.get("tier") == "spot":
            self._judge_lent(event, before)
        if event.about in self.live:
            self.claims.broken(f"{event.about} placed again while live", self._around(event))
        waiting = {str(w.get("workloadId")) for w in event.data.get("waitingFor") or ()}
        self.live[event.about] = Live(event, event.units(), waiting)
        for unit in event.units():
            self._claim(event, unit, waiting)

    def _claim(self, event: Event, unit: str, waiting: set[str]) -> None:
        self.claims.judged()
        holder = self.claimed.get(unit)
        if holder is None and unit not in self.held:
            self.claimed[unit] = event.about
        elif holder in waiting and unit not in self.held:
            self.held[unit] = event.about
            self.claims.notes["held for a waiting workload"] += 1
        else:
            other = self.held.get(unit) if holder in waiting else holder
            self.claims.broken(
                f"{unit} claimed by {event.about} while {other} holds it", self._around(event)
            )

    def _judge_lent(self, event: Event, before: Governance | None) -> None:
        org = str(event.data.get("orgId"))
        for unit in event.units():
            self.lent.judged()
            verdict = self.governance.spot_on(unit, org, event.at)
            if verdict == "withheld" and before is not None:
                verdict = before.spot_on(unit, org, event.at)
            self.lent.notes[verdict] += 1
            if verdict == "withheld":
                self.lent.broken(
                    f"spot {event.about} of {org} placed on {unit}, which its reservation "
                    "had not lent",
                    self._around(event, [unit]),
                )

    def _left(self, event: Event) -> None:
        live = self.live.pop(event.about, None)
        if live is None:
            self.claims.notes["ends of workloads not live"] += 1
            return
        for unit in live.units:
            if self.claimed.get(unit) == event.about:
                waiting = self.held.pop(unit, None)
                if waiting is None:
                    del self.claimed[unit]
                else:
                    self.claimed[unit] = waiting
            elif self.held.get(unit) == event.about:
                del self.held[unit]

    def _started(self, event: Event) -> None:
        live = self.live.get(event.about)
        for unit in live.units if live else event.units():
            self.claims.judged()
            if self.claimed.get(unit) != event.about:
                self.claims.broken(
                    f"{event.about} started while {self.claimed.get(unit)} claims {unit}",
                    self._around(event),
                )
        if live is not None:
            live.waiting_for = set()

    def _units_removed(self, event: Event) -> None:
        for unit in event.data.get("removedUnitIds") or ():
            if unit in self.claimed:
                self.claims.broken(
                    f"{unit} removed from the node while {self.claimed[unit]} claims it",
                    self._around(event, [str(unit)]),
                )

    def _around(self, event: Event, touching: Iterable[str] = ()) -> list[Event]:
        return around(self.done, event, [*event.units(), *touching])

    def placement_of(self, workload: str, at: int) -> Event | None:
        """The workload's latest placement at or before ``at``."""
        earlier = [e for e in self.placements.get(workload, []) if e.at <= at]
        return earlier[-1] if earlier else None
