"""A reservation as the API shows it, and its version tag: what every write on one answers
with (a create, a change, a PATCH, a re-affirm, and ``capacity``'s release, reclaim and
lending policy), and what its If-Match is checked against."""

from __future__ import annotations

import hashlib
from dataclasses import asdict
from datetime import datetime

from reservations.kernel.idempotency.models import Outcome
from reservations.kernel.pipeline import Route
from reservations.kernel.preconditions import etag_header
from reservations.kernel.times import format_time
from reservations.kernel.wire import response_json
from reservations.lifecycle.models import LendingPolicyView, ReservationView
from reservations.nodes import (
    LendingPolicy,
    NodeSnapshot,
    Reservation,
    ReservationStatus,
    UnitGenerations,
    effective_status,
)


def lending_view(policy: LendingPolicy | None) -> LendingPolicyView | None:
    """A lending policy as the reservation object shows it (None: it has none)."""
    if policy is None:
        return None
    return LendingPolicyView(**asdict(policy))


def version_tag(version: int, status: ReservationStatus) -> str:
    """The tag of a reservation at its stored item's ``version`` showing ``status``: opaque
    and strong, the same for the same pair and only for it. Every write to a reservation's
    item bumps its version; its effective status is the one field the API derives when
    read (the clock, a node update's review), so the pair changes whenever its view does."""
    digest = hashlib.sha256(f"{version}:{status.value}".encode()).hexdigest()
    return digest[:20]


def reservation_etag(reservation: Reservation, node: UnitGenerations, now: datetime) -> str:
    """The reservation's current tag: its stored version and its effective status now, on
    the node's unit generations (a derived review changes it)."""
    return version_tag(reservation.version, effective_status(reservation, node, now))


def route_reservation_etag(
    snapshot: NodeSnapshot | None, route: Route, now: datetime
) -> str | None:
    """The current tag of the route's reservation (``reservationId``) on the node as read;
    None when the node has no such reservation. A write's ``WriteSpec.etag``: the
    pipeline checks If-Match against it."""
    if snapshot is None:
        return None
    reservation_id = route.params.get("reservationId")
    for reservation in snapshot.reservations:
        if reservation.id == reservation_id:
            return reservation_etag(reservation, snapshot.node, now)
    return None


def reservation_answer(
    view: ReservationView, status: int = 200, headers: tuple[tuple[str, str], ...] = ()
) -> Outcome:
    """An answer carrying one reservation object: its body, rendered once, and its
    ``ETag`` (the object's ``etag``, quoted), besides ``headers``; a replay repeats both."""
    return Outcome(status, response_json(view), (*headers, etag_header(view.etag)))


def reservation_view(
    reservation: Reservation,
    node: UnitGenerations,
    now: datetime,
    released: tuple[str, ...],
    updated_at: datetime,
    etag: str | None = None,
) -> ReservationView:
    """A reservation with its effective status (on the node's unit generations, from its
    node item or its list access item), sorted ids, and its tag (``etag``: another than the
    reservation's own, as a dry run names the version it ran against)."""
    status = effective_status(reservation, node, now)
    return ReservationView(
        id=reservation.id,
        node_id=reservation.node_id,
        status=status.value,
        starts_at=format_time(reservation.starts_at),
        ends_at=format_time(reservation.ends_at) if reservation.ends_at else None,
        allowed_org_ids=sorted(reservation.allowed_org_ids),
        managing_org_ids=sorted(reservation.managing_org_ids),
        reserved_unit_ids=sorted(reservation.reserved_unit_ids),
        released_unit_ids=sorted(released),
        contract_ref=reservation.contract_ref,
        reason=reservation.reason,
        topology_gen=reservation.topology_gen,
        lending=lending_view(reservation.lending),
        created_at=format_time(reservation.created_at),
        updated_at=format_time(updated_at),
        etag=etag if etag is not None else version_tag(reservation.version, status),
    )
