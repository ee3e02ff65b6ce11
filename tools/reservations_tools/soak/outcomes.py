"""What each check found: the cases it judged, its violations (each with the events around
it), and what it counted without judging (notes)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from reservations_tools.soak.record import Event, from_ms

# Events shown before the one a violation is about, at most.
CONTEXT = 5
# The data fields a line of context shows, when the event has them.
SHOWN = ("unitIds", "releasedUnitIds", "state", "tier", "orgId", "reservationId",
         "terminationId", "requestedAt", "terminateAt", "promisedNoticeSeconds",
         "promisedMinRunSeconds", "outcome", "time", "startsAt", "endsAt",
         "waitingFor", "freedUnitIds", "changes")  # fmt: skip


@dataclass(frozen=True)
class Violation:
    """One case that broke its invariant: in words, with the events it was read from (the
    one it is about last)."""

    text: str
    events: tuple[Event, ...] = ()


@dataclass
class Outcome:
    """One invariant: what it says, how many cases it judged, what broke it."""

    name: str
    says: str
    cases: int = 0
    violations: list[Violation] = field(default_factory=list)
    notes: Counter[str] = field(default_factory=Counter)

    def judged(self, count: int = 1) -> None:
        self.cases += count

    def broken(self, text: str, events: Iterable[Event] = ()) -> None:
        self.violations.append(Violation(text, tuple(events)))

    @property
    def holds(self) -> bool:
        return not self.violations


def around(before: Sequence[Event], event: Event, touching: Iterable[str]) -> list[Event]:
    """The last few events before ``event`` that name what it names (a unit, a workload, a
    reservation, a termination), then the event itself."""
    names = set(touching) | {event.about}
    related = [e for e in before if e is not event and names & _names(e)]
    return [*related[-CONTEXT:], event]


def _names(event: Event) -> set[str]:
    data = event.data
    found = {event.about, *event.units()}
    for key in ("releasedUnitIds", "freedUnitIds", "reclaimedUnitIds", "terminated"):
        found.update(str(v) for v in data.get(key) or ())
    for key in ("terminationId", "reservationId"):
        if data.get(key):
            found.add(str(data[key]))
    return found


def line(event: Event) -> str:
    """One event in a line: time, node, type, subject, and the data a reader needs."""
    shown = {k: event.data[k] for k in SHOWN if event.data.get(k) not in (None, [], {})}
    details = " ".join(f"{k}={v}" for k, v in shown.items())
    return f"{from_ms(event.at)} {event.node} {event.type} {event.about} {details}".rstrip()
