"""When a reservation is history, since when, and until when it stays readable.

Ended reservations (effective status ``cancelled`` or ``expired``) leave the node's partition
for its history: a cancel moves its own, the history mover moves the expired ones. Readers
never wait for the move (past its ``endsAt`` a reservation is expired wherever it is); the
history keeps it ``HistoryRetentionDays`` after it ended, then it is gone (404). The orgs a
reservation names may list the node as long (``named_*``: what the creates, changes and ends
write in the node's list access, which ``nodes`` reads with ``named_at``).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from reservations.kernel.times import LAST_MOMENT
from reservations.nodes import Reservation, ReservationStatus


def ended_at(reservation: Reservation) -> datetime:
    """A cancelled reservation ended at its cancel (its last write); any other at its
    ``endsAt`` (an open-ended one ends only by a cancel: its last write then)."""
    if reservation.status is ReservationStatus.CANCELLED or reservation.ends_at is None:
        return reservation.updated_at
    return reservation.ends_at


def retained_until(reservation: Reservation, retention_days: int) -> datetime:
    """``retention_days`` after it ended, within year 9999."""
    return _kept(ended_at(reservation), retention_days)


def _kept(end: datetime, retention_days: int) -> datetime:
    if LAST_MOMENT - end <= timedelta(days=retention_days):
        return LAST_MOMENT
    return end + timedelta(days=retention_days)


def due_to_move(reservation: Reservation, now: datetime) -> bool:
    """An expired reservation the mover may take out of the node's partition: past its
    ``endsAt`` (a cancelled one moves with its cancel)."""
    return reservation.ends_at is not None and now >= reservation.ends_at


def named_until(reservation: Reservation, retention_days: int) -> datetime:
    """Until when the orgs it names may list the node for it: ``retention_days`` after it
    ended, or, while it is live, after its ``endsAt`` (an open-ended one: year 9999; a
    cancel brings it forward to the cancel's time)."""
    if reservation.status is ReservationStatus.CANCELLED or reservation.ends_at is not None:
        return retained_until(reservation, retention_days)
    return LAST_MOMENT


def named_orgs_until(
    reservations: Iterable[Reservation], retention_days: int
) -> dict[str, datetime]:
    """Every org the reservations name (audience or managers), with the latest moment one
    of them names it until (:func:`named_until`)."""
    until: dict[str, datetime] = {}
    for reservation in reservations:
        end = named_until(reservation, retention_days)
        for org_id in (*reservation.allowed_org_ids, *reservation.managing_org_ids):
            until[org_id] = max(end, until.get(org_id, end))
    return until


def naming_the_same(
    reservations: Iterable[Reservation], reservation: Reservation
) -> tuple[Reservation, ...]:
    """Those of ``reservations`` that name an org ``reservation`` names."""
    named = {*reservation.allowed_org_ids, *reservation.managing_org_ids}
    return tuple(
        r for r in reservations if named.intersection((*r.allowed_org_ids, *r.managing_org_ids))
    )


def _names(reservation: Reservation) -> tuple[str, ...]:
    return (*reservation.allowed_org_ids, *reservation.managing_org_ids)


def named_after_create(
    reservation: Reservation, named_by: Iterable[Reservation], retention_days: int
) -> dict[str, datetime]:
    """The orgs a new reservation names, each until the latest end among it and the node's
    reservations as read that name the org, and never before the create's time plus the
    retention: a reservation in the history ended before it, so is named no longer."""
    floor = _kept(reservation.created_at, retention_days)
    until = named_orgs_until((*named_by, reservation), retention_days)
    return {org: max(until[org], floor) for org in _names(reservation)}


def named_after_end(
    ended: Reservation, named_by: Iterable[Reservation], retention_days: int
) -> tuple[dict[str, datetime], dict[str, datetime], tuple[Reservation, ...]]:
    """For the orgs a reservation that ends now (``ended``, as it leaves the node) names:
    until when the list access names them before the end (from ``named_by``, the node's
    reservations as read naming them, the ending one included as it was: a live one is
    named past any history item), and after it; and the reservations that decide the
    after (for each org, the other one naming it longest, where that is longer than the
    end's own retention): the end holds only while they are still as read."""
    read = tuple(named_by)
    before = named_orgs_until(read, retention_days)
    others = tuple(r for r in read if r.id != ended.id)
    after = named_orgs_until((*others, ended), retention_days)
    own = named_until(ended, retention_days)
    deciding: dict[str, Reservation] = {}
    for org in _names(ended):
        naming = sorted((r for r in others if org in _names(r)), key=lambda r: r.id)
        longest = max(naming, key=lambda r: named_until(r, retention_days), default=None)
        if longest is not None and named_until(longest, retention_days) > own:
            deciding[longest.id] = longest
    orgs = _names(ended)
    return (
        {o: before.get(o, after[o]) for o in orgs},
        {o: after[o] for o in orgs},
        tuple(deciding[k] for k in sorted(deciding)),
    )


def named_after_change(
    before: Reservation,
    after: Reservation,
    named_by: Iterable[Reservation],
    retention_days: int,
    now: datetime,
) -> dict[str, datetime]:
    """The orgs a changed reservation (``before`` as read, ``after`` as changed) named or
    names whose moment in the node's list access the change moves, each with its new one:
    the latest end among ``after`` and the node's other reservations as read that name it
    (an extended or opened term names longer, a shortened one less), and, for an org the
    change no longer names, never before ``now`` plus the retention. That org saw the
    change's event (reduced), which the node's feed keeps that long; and a reservation in
    the node's history naming it ended before now, so is named no longer than that."""
    others = tuple(r for r in named_by if r.id != before.id)
    was = named_orgs_until((*others, before), retention_days)
    will = named_orgs_until((*others, after), retention_days)
    removed = set(_names(before)) - set(_names(after))
    floor = _kept(now, retention_days)
    moved: dict[str, datetime] = {}
    for org in dict.fromkeys((*_names(before), *_names(after))):
        until = max(will.get(org, floor), floor) if org in removed else will[org]
        if until != was.get(org):
            moved[org] = until
    return moved
