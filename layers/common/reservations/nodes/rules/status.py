"""Effective reservation status: the stored status as the clock and the node's topology make
it. Every endpoint reads a reservation's status through :func:`effective_status` alone, with
the node's unit generations from the node item or, in the reservation list, from the node's
list access item (the same map, written in the same transaction)."""

from __future__ import annotations

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
    status = reservation.status
    if status in _OVER:
        return status
    if reservation.ends_at is not None and now >= reservation.ends_at:
        return ReservationStatus.EXPIRED
    if status is ReservationStatus.NEEDS_REVIEW or changed_since_sold(reservation, node):
        return ReservationStatus.NEEDS_REVIEW
    if status is ReservationStatus.PENDING and now >= reservation.starts_at:
        return ReservationStatus.ACTIVE
    return status


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
