"""Effective reservation status: the stored status as the clock and the node's topology make
it. Every endpoint reads a reservation's status through :func:`effective_status` alone, with
the node's unit generations from the node item or, in the reservation list, from the node's
list access item (the same map, written in the same transaction)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from reservations.nodes.models.partition import Reservation, ReservationStatus, UnitGenerations

# Stored statuses a topology change can turn into ``needs-review`` when read.
_REVIEWABLE = frozenset({ReservationStatus.PENDING, ReservationStatus.ACTIVE})
_OVER = frozenset({ReservationStatus.CANCELLED, ReservationStatus.EXPIRED})


def effective_status(
    reservation: Reservation, node: UnitGenerations, now: datetime
) -> ReservationStatus:
    """``cancelled`` (and a stored ``expired``) stay; anything else past its ``endsAt`` is
    ``expired`` (an ended review governs nothing); then ``needs-review``, stored or derived
    (:func:`changed_since_sold`); then a ``pending`` one turns ``active`` at ``startsAt``."""
    return status_at(
        reservation.status,
        reservation.starts_at,
        reservation.ends_at,
        lambda: changed_since_sold(reservation, node),
        now,
    )


def status_at(
    stored: ReservationStatus,
    starts_at: datetime,
    ends_at: datetime | None,
    in_review: Callable[[], bool],
    now: datetime,
) -> ReservationStatus:
    """The effective status from the stored one, the term, and whether the node's units
    changed since it was sold (asked only when it decides): what :func:`effective_status`
    says of a reservation, and the fleet index of an entry that keeps those."""
    if stored in _OVER:
        return stored
    if ends_at is not None and now >= ends_at:
        return ReservationStatus.EXPIRED
    if stored is ReservationStatus.NEEDS_REVIEW or in_review():
        return ReservationStatus.NEEDS_REVIEW
    if stored is ReservationStatus.PENDING and now >= starts_at:
        return ReservationStatus.ACTIVE
    return stored


def changed_since_sold(reservation: Reservation, node: UnitGenerations) -> bool:
    """A stored ``pending`` or ``active`` reservation one of whose units is no longer on the
    node, or changed at a generation after the reservation's own ``topologyGen`` (absent: 0,
    older than every change a node update records). A node (or access) item that keeps no
    generations (written before it did) reviews nothing: its updates stored ``needs-review``
    instead."""
    changed_at = node.unit_changed_at
    if changed_at is None or reservation.status not in _REVIEWABLE:
        return False
    sold_at = reservation.topology_gen or 0
    return any(
        changed_at.get(unit_id, sold_at + 1) > sold_at for unit_id in reservation.reserved_unit_ids
    )


def in_term(reservation: Reservation, now: datetime) -> bool:
    """Whether ``now`` lies in ``[startsAt, endsAt)`` (no ``endsAt``: open-ended)."""
    if now < reservation.starts_at:
        return False
    return reservation.ends_at is None or now < reservation.ends_at
