"""Node histories for the usage tests: a small simulator of one node that turns steps (what
happens, how long after the last, a number that picks among the choices) into the events
the service would write, as the feed carries them, and keeps what the balance is checked
against (the node's units and GPUs over time), independently of the fold."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reservations.kernel.times import format_event_time, format_moment, format_time
from reservations.usage.rules.facts import from_ms

SECOND = 1000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
DAY = 24 * HOUR
T0 = 1_764_547_200_000  # 2025-12-01T00:00:00Z
NODE = "node-u1"

KINDS = (
    "create",
    "release",
    "reclaim",
    "place",
    "end",
    "report",
    "node_update",
    "reaffirm",
    "cancel",
    "patch",
    "take_back",
    "wait",
)
TIERS = ("spot", "reserved", "on-demand")
LIVE = ("pending", "active", "needs-review")


def at(ms: int) -> str:
    return format_event_time(from_ms(ms))


def event(
    event_id: str, ms: int, kind: str, subject: str, /, node: str = NODE, **data: Any
) -> dict[str, Any]:
    """An event as a feed carries it."""
    return {
        "specversion": "1.0",
        "id": event_id,
        "type": kind,
        "source": f"/v1/nodes/{node}",
        "subject": subject,
        "time": at(ms),
        "datacontenttype": "application/json",
        "data": data,
    }


def unit(n: int) -> str:
    return f"0000:{n:02x}:00.0"


def _choose(items: list[Any], pick: int) -> Any:
    return items[pick % len(items)]


def _subset(items: list[str], pick: int) -> list[str]:
    """A non-empty subset of ``items``, by the bits of ``pick``."""
    chosen = [item for i, item in enumerate(items) if pick >> i & 1]
    return sorted(chosen or [items[pick % len(items)]])


def _second_after(ms: int) -> int:
    return -(-ms // SECOND) * SECOND


@dataclass
class Res:
    id: str
    status: str
    starts: int
    ends: int | None
    units: list[str]
    released: list[str] = field(default_factory=list)
    gen: int = 1


@dataclass
class Work:
    id: str
    tier: str
    units: list[str]
    state: str = "running"  # running, terminating, waiting
    waiting_for: set[str] = field(default_factory=set)


@dataclass
class History:
    """One node's life so far: its events in commit order, and its units over time."""

    now: int = T0
    gen: int = 1
    events: list[dict[str, Any]] = field(default_factory=list)
    gpus: dict[str, int] = field(default_factory=dict)
    reservations: dict[str, Res] = field(default_factory=dict)
    workloads: dict[str, Work] = field(default_factory=dict)
    # (from, units, GPUs): the node's units and their GPUs from that moment on.
    timeline: list[tuple[int, int, int]] = field(default_factory=list)
    # What each unit is at each moment something happened (the last word at a moment):
    # its state, its governing reservation and its GPUs, read by the contract's table from
    # the simulator's own state (:meth:`expected`), not by the fold's rules.
    seen: dict[int, dict[str, tuple[str, str | None, int]]] = field(default_factory=dict)
    made: int = 0

    def emit(self, kind: str, subject: str, /, **data: Any) -> None:
        self.made += 1
        self.events.append(event(f"evt-{self.made:04d}", self.now, kind, subject, **data))

    def _units_changed(self) -> None:
        self.timeline.append((self.now, len(self.gpus), sum(self.gpus.values())))

    def units_integral(self, start: int, end: int) -> tuple[int, int]:
        """∫ units dt and ∫ GPUs dt over ``[start, end)``."""
        units = gpus = 0
        for index, (since, count, total) in enumerate(self.timeline):
            until = self.timeline[index + 1][0] if index + 1 < len(self.timeline) else end
            span = max(0, min(until, end) - max(since, start))
            units, gpus = units + span * count, gpus + span * total
        return units, gpus

    # The node's start.

    def register(self, pick: int) -> None:
        self.gpus = {unit(n): 1 + (pick >> n) % 4 for n in range(1 + pick % 4)}
        units = [{"id": u, "sellableGpus": g} for u, g in self.gpus.items()]
        self.emit(
            "node.registered",
            f"nodes/{NODE}",
            topologyGen=1,
            addedUnitIds=sorted(self.gpus),
            removedUnitIds=[],
            changedUnitIds=[],
            units=units,
        )
        self._units_changed()

    def load(self, pick: int) -> None:
        """A fleet file's node: its units, one active reservation with its first unit lent,
        and a spot workload on it."""
        self.gpus = {unit(n): 1 + (pick >> n) % 4 for n in range(2 + pick % 3)}
        first = min(self.gpus)
        res = Res("res-loaded", "active", T0 - DAY, T0 + DAY, [first], [first])
        self.reservations[res.id] = res
        self.workloads["vm-loaded"] = Work("vm-loaded", "spot", [first])
        self.emit(
            "node.loaded",
            f"nodes/{NODE}",
            topologyGen=1,
            units=[{"id": u, "sellableGpus": g} for u, g in self.gpus.items()],
            reservations=[
                {
                    "id": res.id,
                    "status": "active",
                    "startsAt": format_time(from_ms(res.starts)),
                    "endsAt": format_time(from_ms(T0 + DAY)),
                    "reservedUnitIds": [first],
                    "releasedUnitIds": [first],
                    "topologyGen": 1,
                }
            ],
            workloads=[
                {
                    "id": "vm-loaded",
                    "kind": "vm",
                    "tier": "spot",
                    "orgId": "org-spot",
                    "unitIds": [first],
                    "state": "running",
                }
            ],
        )
        self._units_changed()

    # Time passes: the clock's moments on the way.

    def advance(self, gap: int) -> None:
        until = self.now + gap
        while (due := self._next_moment(until)) is not None:
            moment, res, kind = due
            self.now = moment
            if kind == "start":
                res.status = "active"
                self.emit("reservation.activated", f"reservations/{res.id}", moment="startsAt")
            else:
                res.status = "expired"
                self.emit("reservation.expired", f"reservations/{res.id}", moment="endsAt")
            self.look()
        self.now = until

    def _next_moment(self, until: int) -> tuple[int, Res, str] | None:
        due = []
        for res in self.reservations.values():
            if res.status == "pending" and res.starts <= until:
                due.append((res.starts, res.id, res, "start"))
            if res.status in LIVE and res.ends is not None and res.ends <= until:
                due.append((res.ends, res.id, res, "end"))
        if not due:
            return None
        moment, _, res, kind = min(due, key=lambda d: (d[0], d[1], d[3] == "start"))
        return moment, res, kind

    # What the node's reservations and workloads are, now.

    def live(self, *statuses: str) -> list[Res]:
        return [r for r in self.reservations.values() if r.status in (statuses or LIVE)]

    def in_term(self) -> list[Res]:
        return [r for r in self.live("active") if r.starts <= self.now]

    def claimed(self) -> set[str]:
        return {u for w in self.workloads.values() for u in w.units}

    def free_of_reservations(self) -> list[str]:
        held = {u for r in self.live() for u in r.units}
        return sorted(set(self.gpus) - held)

    # What each unit is now, by the contract's table.

    def look(self) -> None:
        self.seen[self.now] = {u: self.expected(u) for u in self.gpus}

    def _governs(self, res: Res) -> bool:
        if res.status == "needs-review":
            return True
        in_term = res.starts <= self.now and (res.ends is None or self.now < res.ends)
        return res.status == "active" and in_term

    def _claims(self, unit_id: str) -> set[str]:
        claims = set()
        for work in self.workloads.values():
            waited = {
                u for w in work.waiting_for if w in self.workloads for u in self.workloads[w].units
            }
            if unit_id not in work.units:
                continue
            if unit_id in waited or work.tier != "spot":
                claims.add("other")
            else:
                claims.add("reclaiming" if work.state == "terminating" else "spot")
        return claims

    def expected(self, unit_id: str) -> tuple[str, str | None, int]:
        governing = sorted(
            (r for r in self.reservations.values() if unit_id in r.units and self._governs(r)),
            key=lambda r: r.id,
        )
        res = governing[0] if governing else None
        claims = self._claims(unit_id)
        if res is not None and res.status == "needs-review":
            state = "review"
        elif "reclaiming" in claims:
            state = "reclaiming"
        elif res is not None:
            lent = unit_id in res.released and claims <= {"spot"}
            state = (
                ("lent_used" if claims else "lent_idle")
                if lent
                else ("reserved_used" if claims else "reserved_idle")
            )
        else:
            state = "open_used" if claims else "open_idle"
        return state, res and res.id, self.gpus[unit_id]

    # The steps.

    def create(self, pick: int) -> None:
        free = self.free_of_reservations()
        if not free:
            return
        starts = _second_after(self.now) + _choose([0, 0, 10 * MINUTE, HOUR], pick >> 4)
        ends = _choose(
            [None, starts + 30 * MINUTE, starts + 2 * HOUR, starts + 5 * HOUR], pick >> 6
        )
        res = Res(
            f"res-{self.made:04d}",
            "active" if starts <= self.now else "pending",
            starts,
            ends,
            _subset(free, pick),
            gen=self.gen,
        )
        self.reservations[res.id] = res
        self.emit(
            "reservation.created",
            f"reservations/{res.id}",
            status=res.status,
            startsAt=format_time(from_ms(starts)),
            endsAt=ends and format_time(from_ms(ends)),
            unitIds=res.units,
            allowedOrgIds=["org-lab"],
            managingOrgIds=[],
            topologyGen=self.gen,
        )

    def release(self, pick: int) -> None:
        if not (candidates := self.in_term()):
            return
        res = _choose(candidates, pick)
        named = _subset(res.units, pick >> 3)
        res.released = sorted(set(res.released) | set(named))
        self.emit(
            "reservation.released",
            f"reservations/{res.id}",
            unitIds=named,
            releasedUnitIds=res.released,
            reason=None,
        )

    def _terminate(self, res: Res, units: set[str]) -> list[str]:
        """The spot workloads on ``units`` terminate (those already terminating count)."""
        terminated = []
        for work in sorted(self.workloads.values(), key=lambda w: w.id):
            if work.tier != "spot" or work.state == "waiting" or not units & set(work.units):
                continue
            terminated.append(work.id)
            if work.state == "running":
                work.state = "terminating"
                self.emit(
                    "workload.termination_requested",
                    f"workloads/{work.id}",
                    tier="spot",
                    unitIds=work.units,
                    reservationId=res.id,
                    terminationId=f"term-{work.id}",
                    requestedAt=format_moment(from_ms(self.now)),
                    terminateAt=format_moment(from_ms(self.now + MINUTE)),
                )
        return terminated

    def reclaim(self, pick: int) -> None:
        if not (candidates := [r for r in self.in_term() if r.released]):
            return
        res = _choose(candidates, pick)
        named = _subset(res.released, pick >> 3)
        res.released = sorted(set(res.released) - set(named))
        terminated = self._terminate(res, set(named))
        self.emit(
            "reservation.reclaimed",
            f"reservations/{res.id}",
            unitIds=named,
            releasedUnitIds=res.released,
            terminated=terminated,
            skipped=[],
        )

    def take_back(self, pick: int) -> None:
        """The audience's workload placed on lent units that spot workloads run on: it
        waits for them."""
        spot = {
            u
            for w in self.workloads.values()
            if w.tier == "spot" and w.state == "running"
            for u in w.units
        }
        candidates = [r for r in self.in_term() if set(r.released) & spot]
        if not candidates:
            return
        res = _choose(candidates, pick)
        named = _subset(sorted(set(res.released) & spot), pick >> 3)
        res.released = sorted(set(res.released) - set(named))
        terminated = self._terminate(res, set(named))
        work = Work(f"vm-{self.made:04d}", "reserved", named, "waiting", set(terminated))
        self.workloads[work.id] = work
        self.emit(
            "workload.placed",
            f"workloads/{work.id}",
            kind="vm",
            tier="reserved",
            orgId="org-lab",
            unitIds=named,
            reservationId=res.id,
            reclaimedUnitIds=named,
            waitingFor=[{"workloadId": w, "terminationId": f"term-{w}"} for w in terminated],
        )
        self.emit(
            "reservation.reclaimed",
            f"reservations/{res.id}",
            unitIds=named,
            cause="placement",
            workloadId=work.id,
            releasedUnitIds=res.released,
            terminated=terminated,
        )

    def place(self, pick: int) -> None:
        """A workload on free units: half the time a spot one on lent units, if any are."""
        free = sorted(set(self.gpus) - self.claimed())
        lent = sorted({u for r in self.in_term() for u in r.released} & set(free))
        if lent and pick & 1:
            units, tier = _subset(lent, pick >> 1), "spot"
        elif free:
            units, tier = _subset(free, pick), _choose(list(TIERS), pick >> 5)
        else:
            return
        work = Work(f"vm-{self.made:04d}", tier, units)
        self.workloads[work.id] = work
        self.emit(
            "workload.placed",
            f"workloads/{work.id}",
            kind="vm",
            tier=tier,
            orgId="org-x",
            unitIds=units,
        )

    def _gone(self, work: Work, kind: str, **data: Any) -> None:
        del self.workloads[work.id]
        self.emit(kind, f"workloads/{work.id}", tier=work.tier, unitIds=work.units, **data)
        for waiting in sorted(self.workloads.values(), key=lambda w: w.id):
            if work.id in waiting.waiting_for:
                waiting.waiting_for.discard(work.id)
                if not waiting.waiting_for:
                    waiting.state = "running"
                    self.emit(
                        "workload.started",
                        f"workloads/{waiting.id}",
                        tier=waiting.tier,
                        unitIds=waiting.units,
                    )

    def end(self, pick: int) -> None:
        if self.workloads:
            work = _choose(sorted(self.workloads.values(), key=lambda w: w.id), pick)
            self._gone(work, "workload.ended", freedUnitIds=work.units)

    def report(self, pick: int) -> None:
        terminating = sorted(
            (w for w in self.workloads.values() if w.state == "terminating"), key=lambda w: w.id
        )
        if terminating:
            work = _choose(terminating, pick)
            self._gone(work, "workload.terminated", outcome="terminated", time=at(self.now))

    def node_update(self, pick: int) -> None:
        added, removed, changed = [], [], []
        op = pick % 3
        if op == 0:
            changed = [_choose(sorted(self.gpus), pick >> 2)]
            self.gpus[changed[0]] = 1 + (self.gpus[changed[0]] + pick) % 4
        elif op == 1:
            added = [unit(max(int(u[5:7], 16) for u in self.gpus) + 1)]
            self.gpus[added[0]] = 1 + (pick >> 2) % 4
        else:
            removable = sorted(set(self.gpus) - self.claimed())
            if len(self.gpus) < 2 or not removable:
                return
            removed = [_choose(removable, pick >> 2)]
            del self.gpus[removed[0]]
        self.gen += 1
        self.emit(
            "node.updated",
            f"nodes/{NODE}",
            topologyGen=self.gen,
            addedUnitIds=added,
            removedUnitIds=removed,
            changedUnitIds=changed,
            units=[{"id": u, "sellableGpus": self.gpus[u]} for u in added + changed],
        )
        self._units_changed()
        for res in sorted(self.live("pending", "active"), key=lambda r: r.id):
            if set(res.units) & set(removed + changed):
                res.status = "needs-review"
                self.emit(
                    "reservation.needs_review",
                    f"reservations/{res.id}",
                    topologyGen=self.gen,
                    unitIds=sorted(set(res.units) & set(removed + changed)),
                )

    def reaffirm(self, pick: int) -> None:
        candidates = [r for r in self.live("needs-review") if set(r.units) <= set(self.gpus)]
        if not candidates:
            return
        res = _choose(candidates, pick)
        res.status, res.gen, res.released = (
            ("active" if res.starts <= self.now else "pending"),
            self.gen,
            [],
        )
        self.emit(
            "reservation.reaffirmed",
            f"reservations/{res.id}",
            status=res.status,
            topologyGen=self.gen,
            unitIds=res.units,
            reason=None,
        )

    def cancel(self, pick: int) -> None:
        if candidates := self.live():
            res = _choose(candidates, pick)
            previous, res.status, res.released = res.status, "cancelled", []
            self.emit(
                "reservation.cancelled",
                f"reservations/{res.id}",
                previousStatus=previous,
                unitIds=res.units,
                reason=None,
            )

    def patch(self, pick: int) -> None:
        if not (candidates := self.live("pending", "active")):
            return
        res, changes = _choose(candidates, pick), {}
        op = (pick >> 3) % 3
        if op == 0:
            ends = _choose(
                [
                    None,
                    max(res.starts, _second_after(self.now))
                    + _choose([MINUTE, 3 * HOUR], pick >> 5),
                ],
                pick >> 6,
            )
            changes["endsAt"] = {
                "from": res.ends and format_time(from_ms(res.ends)),
                "to": ends and format_time(from_ms(ends)),
            }
            res.ends = ends
        elif op == 1 and len(res.units) > 1:
            gone = _choose(res.units, pick >> 5)
            changes["reservedUnitIds"] = {
                "from": res.units,
                "to": [u for u in res.units if u != gone],
            }
            if gone in res.released:
                changes["releasedUnitIds"] = {
                    "from": res.released,
                    "to": [u for u in res.released if u != gone],
                }
            res.units = changes["reservedUnitIds"]["to"]
            res.released = [u for u in res.released if u != gone]
        elif op == 2 and (free := [u for u in self.free_of_reservations() if u not in res.units]):
            new = sorted([*res.units, _choose(free, pick >> 5)])
            changes["reservedUnitIds"], res.units, res.gen = (
                {"from": res.units, "to": new},
                new,
                self.gen,
            )
        if changes:
            self.emit("reservation.updated", f"reservations/{res.id}", changes=changes, reason=None)

    def wait(self, pick: int) -> None:
        """Nothing happens but time (and the clock's moments)."""


def play(start: int, steps: list[tuple[str, int, int]], loaded: bool = False) -> History:
    """A node registered (or loaded) at ``T0 + start``, then ``steps``: (what, how long after
    the last step, a number that picks)."""
    history = History(now=T0 + start)
    history.load(start) if loaded else history.register(start)
    history.look()
    for kind, gap, pick in steps:
        history.advance(gap)
        getattr(history, kind)(pick)
        history.look()
    return history
