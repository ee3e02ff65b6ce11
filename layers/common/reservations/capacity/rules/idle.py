"""Which of a reservation's units its lending policy lends, and when (pure: every moment is
passed in). The rule the lending pass decides by; what it reads and writes is not here.

A unit of an ``active`` reservation with ``auto`` on is **idle** while it is not released
and no workload claims or holds it. Its idle time starts at the latest of: the reservation
last becoming active, the unit joining it, the unit last being freed, ``auto`` being turned
on, and the end of its wait after a take-back. Once idle ``idleSeconds``, it is due.

A pass lends the due units in id order, and stops where fewer than ``keepUnlent`` of the
reservation's units would stay unreleased (busy or not). The next moment worth a pass is the
earliest at which an idle unit not yet due becomes due.

After a take-back a unit waits ``relendAfterSeconds``, doubled for each take-back within an
hour of its last lending, up to an hour; a unit that stayed lent for an hour starts again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from reservations.nodes import (
    LendingPolicy,
    Node,
    Reservation,
    ReservationStatus,
    Unit,
    UnitLending,
    effective_status,
)

# The longest wait after take-backs, and how long a lending must last to reset the doubling.
MAX_WAIT = timedelta(hours=1)
STREAK_WINDOW = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class UnitHistory:
    """What a unit's idle time is counted from, besides the reservation's own moments: when
    it joined the reservation, when it was last freed (None: never claimed since it was
    loaded), and its take-backs (the end of its wait, when it was last lent, how many
    take-backs in a row came within an hour of a lending)."""

    joined_at: datetime
    freed_at: datetime | None = None
    relend_at: datetime | None = None
    lent_at: datetime | None = None
    take_backs: int = 0


@dataclass(frozen=True, slots=True)
class Idle:
    """The reservation as a pass reads it: its units by id, the released ones, the ones a
    workload claims or holds, and when it last became active and ``auto`` was turned on."""

    units: Mapping[str, UnitHistory]
    released: frozenset[str]
    busy: frozenset[str]
    active_since: datetime
    auto_since: datetime
    policy: LendingPolicy


@dataclass(frozen=True, slots=True)
class Lending:
    """What a pass at ``now`` does: the units it lends, in id order, and the next moment a
    unit becomes due (None: nothing idle waits, a write that frees or takes back a unit sets
    the next)."""

    unit_ids: tuple[str, ...] = ()
    next_at: datetime | None = None
    kept: tuple[str, ...] = field(default=())  # due, but kept unlent by keepUnlent


def idle_from(idle: Idle, unit_id: str) -> datetime | None:
    """When the unit's idle time started (None: it is not idle)."""
    if unit_id in idle.released or unit_id in idle.busy:
        return None
    unit = idle.units[unit_id]
    moments = [idle.active_since, idle.auto_since, unit.joined_at]
    moments += [m for m in (unit.freed_at, unit.relend_at) if m is not None]
    return max(moments)


def lending_at(idle: Idle, now: datetime) -> Lending:
    """The units a pass at ``now`` lends, and the next moment one becomes due."""
    if not idle.policy.auto:
        return Lending()
    wait = timedelta(seconds=idle.policy.idle_seconds)
    unreleased = len(idle.units) - len(idle.released & idle.units.keys())
    lent: list[str] = []
    kept: list[str] = []
    later: list[datetime] = []
    for unit_id in sorted(idle.units):
        started = idle_from(idle, unit_id)
        if started is None:
            continue
        due = started + wait
        if due > now:
            later.append(due)
        elif unreleased - 1 >= idle.policy.keep_unlent:
            lent.append(unit_id)
            unreleased -= 1
        else:
            kept.append(unit_id)
    return Lending(tuple(lent), min(later) if later else None, tuple(kept))


def taken_back(unit: UnitHistory, policy: LendingPolicy | None, at: datetime) -> UnitHistory:
    """A unit taken back at ``at`` (by a reclaim or a placement): its wait before it is lent
    again, doubled for each take-back within an hour of its last lending, up to an hour."""
    relend = timedelta(seconds=policy.relend_after_seconds if policy else 0)
    in_a_row = unit.lent_at is not None and at - unit.lent_at < STREAK_WINDOW
    take_backs = unit.take_backs + 1 if in_a_row else 1
    wait = min(relend * 2 ** (take_backs - 1), MAX_WAIT)
    return UnitHistory(unit.joined_at, unit.freed_at, at + wait, unit.lent_at, take_backs)


def lent(
    units: Mapping[str, UnitHistory], unit_ids: Iterable[str], at: datetime
) -> dict[str, UnitHistory]:
    """The units' histories after a lending at ``at``."""
    after = dict(units)
    for unit_id in unit_ids:
        unit = units[unit_id]
        after[unit_id] = UnitHistory(
            unit.joined_at, unit.freed_at, unit.relend_at, at, unit.take_backs
        )
    return after


# --- The reservation as a pass and the writes that take units back read and leave it ---


def records(reservation: Reservation) -> dict[str, UnitLending]:
    return dict(reservation.lending_units)


def _history(reservation: Reservation, unit_id: str, unit: Unit | None) -> UnitHistory:
    record = records(reservation).get(unit_id, UnitLending())
    return UnitHistory(
        joined_at=record.joined_at or reservation.created_at,
        freed_at=unit.freed_at if unit is not None else None,
        relend_at=record.relend_at,
        lent_at=record.lent_at,
        take_backs=record.take_backs,
    )


def _record(history: UnitHistory, joined_at: datetime | None) -> UnitLending:
    return UnitLending(joined_at, history.lent_at, history.relend_at, history.take_backs)


def idle_of(reservation: Reservation, policy: LendingPolicy, units: Mapping[str, Unit]) -> Idle:
    """The reservation's units as the rule reads them: a unit a workload claims, or one held
    for a waiting workload (a take-back's), is busy."""
    owned = reservation.reserved_unit_ids
    return Idle(
        units={u: _history(reservation, u, units.get(u)) for u in owned},
        released=frozenset(reservation.released_unit_ids),
        busy=frozenset(u for u in owned if u in units and _busy(units[u])),
        active_since=reservation.starts_at,
        auto_since=reservation.lending_since or reservation.starts_at,
        policy=policy,
    )


def _busy(unit: Unit) -> bool:
    return unit.claimed_by is not None or unit.held_for is not None


@dataclass(frozen=True, slots=True)
class Pass:
    """What a lending pass at ``now`` does to one reservation: the units it lends (none:
    it only moves the reservation's place in the lending index), and the reservation as it
    leaves it (its releases, its units' records, its next ``lendAt``)."""

    unit_ids: tuple[str, ...]
    after: Reservation


def lending_pass(
    reservation: Reservation, node: Node, units: Mapping[str, Unit], now: datetime
) -> Pass:
    """The pass's decision. Only an ``active`` reservation with ``auto`` on lends. Its next
    moment is the earliest an idle unit becomes due or, while a workload claims one of its
    units, one ``idleSeconds`` from now: a unit freed after this read (its ``freedAt``
    later than now) cannot be due before then, and the pass then reads when it was freed.
    A pending reservation is looked at again at its ``startsAt``; any other, not until a
    write sets its place again."""
    policy = reservation.lending
    status = effective_status(reservation, node, now)
    if policy is None or not policy.auto or status is not ReservationStatus.ACTIVE:
        pending = policy is not None and policy.auto and status is ReservationStatus.PENDING
        return Pass((), replace(reservation, lend_at=reservation.starts_at if pending else None))
    idle = idle_of(reservation, policy, units)
    decided = lending_at(idle, now)
    later = [decided.next_at] if decided.next_at is not None else []
    if idle.busy - idle.released:
        later.append(now + timedelta(seconds=policy.idle_seconds))
    next_at = min(later) if later else None
    if not decided.unit_ids:
        return Pass((), replace(reservation, lend_at=next_at))
    joined = {u: r.joined_at for u, r in reservation.lending_units}
    histories = lent(idle.units, decided.unit_ids, now)
    after = replace(
        reservation,
        released_unit_ids=tuple(sorted({*reservation.released_unit_ids, *decided.unit_ids})),
        lending_units=_records(histories, joined, decided.unit_ids, reservation),
        lend_at=next_at,
        updated_at=now,
        version=reservation.version + 1,
    )
    return Pass(decided.unit_ids, after)


def _records(
    histories: Mapping[str, UnitHistory],
    joined: Mapping[str, datetime | None],
    changed: Iterable[str],
    reservation: Reservation,
) -> tuple[tuple[str, UnitLending], ...]:
    """The reservation's unit records with ``changed`` ones rewritten from their histories
    (a unit with nothing to keep has no record)."""
    kept = records(reservation)
    for unit_id in changed:
        kept[unit_id] = _record(histories[unit_id], joined.get(unit_id))
    return tuple(sorted((u, r) for u, r in kept.items() if r != UnitLending()))


def after_release(reservation: Reservation, unit_ids: Iterable[str], now: datetime) -> Reservation:
    """A release by a manager is a lending too: each unit named records it (the doubling
    wait after take-backs counts from it). Without a policy nothing is kept."""
    if reservation.lending is None:
        return reservation
    named = list(unit_ids)
    units = {u: _history(reservation, u, None) for u in named}
    joined = {u: r.joined_at for u, r in reservation.lending_units}
    return replace(
        reservation, lending_units=_records(lent(units, named, now), joined, named, reservation)
    )


def after_take_back(
    reservation: Reservation, unit_ids: Iterable[str], now: datetime
) -> Reservation:
    """Units taken back (by a reclaim or a placement): each waits before it is lent again,
    and with ``auto`` on the reservation is looked at by the next pass (its wait may end
    before the place it had). Without a policy nothing is kept."""
    policy = reservation.lending
    if policy is None:
        return reservation
    named = list(unit_ids)
    units = {u: taken_back(_history(reservation, u, None), policy, now) for u in named}
    joined = {u: r.joined_at for u, r in reservation.lending_units}
    lend_at = _sooner(reservation.lend_at, now) if policy.auto else reservation.lend_at
    return replace(
        reservation,
        lending_units=_records(units, joined, named, reservation),
        lend_at=lend_at,
    )


def after_policy(
    reservation: Reservation, policy: LendingPolicy | None, now: datetime
) -> Reservation:
    """The reservation with its new policy: ``auto`` turned on starts every unit's idle time
    afresh, and a policy with ``auto`` is looked at by the next pass; without it, the
    reservation leaves the lending index."""
    was_auto = reservation.lending is not None and reservation.lending.auto
    auto = policy is not None and policy.auto
    return replace(
        reservation,
        lending=policy,
        lending_since=now if auto and not was_auto else reservation.lending_since,
        lend_at=_sooner(reservation.lend_at, now) if auto else None,
    )


def _sooner(at: datetime | None, now: datetime) -> datetime:
    return now if at is None else min(at, now)
