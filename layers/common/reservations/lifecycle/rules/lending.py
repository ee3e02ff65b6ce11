"""What a reservation's own writes leave of its lending by the clock (pure; the rule itself
is the capacity slice's): a PATCH records when each added unit joined, a re-affirm starts
every unit's idle time afresh, and with ``auto`` on either puts the reservation before the
next lending pass (an early place in the lending index costs that pass one read; a late one
would lend late)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from reservations.nodes import Reservation, UnitLending


def _looked_at(reservation: Reservation, now: datetime) -> datetime | None:
    """Its place in the lending index after a write at ``now`` that may make a unit due
    sooner: no later than ``now`` with ``auto`` on, unchanged otherwise."""
    if reservation.lending is None or not reservation.lending.auto:
        return reservation.lend_at
    return now if reservation.lend_at is None else min(reservation.lend_at, now)


def changed(before: Reservation, after: Reservation, now: datetime) -> Reservation:
    """A PATCH's reservation: each added unit joined now, a removed one's record dropped."""
    if after.lending is None:
        return after
    added = set(after.reserved_unit_ids) - set(before.reserved_unit_ids)
    kept = {u: r for u, r in before.lending_units if u in after.reserved_unit_ids}
    for unit_id in added:
        kept[unit_id] = UnitLending(joined_at=now)
    return replace(after, lending_units=tuple(sorted(kept.items())), lend_at=_looked_at(after, now))


def reaffirmed(reservation: Reservation, now: datetime) -> Reservation:
    """A re-affirmed reservation: active (again) from now, for every unit's idle time."""
    if reservation.lending is None:
        return reservation
    return replace(reservation, lending_since=now, lend_at=_looked_at(reservation, now))
