"""``PATCH /v1/nodes/{nodeId}/reservations/{id}``: change a live reservation's terms.

The operator or the node's owner, while it is pending or active. Decided from the node as
read, like a create (``reservations.rules.update``: the same overlap rules), and written by
the write pipeline in one transaction conditioned on what it read: the node item's version
(bumped, so it serializes with creates, node updates and other changes on the node), the
reservation's (written whole, from the model), and each added unit's. A change never
terminates anything. A PATCH that changes nothing writes nothing, emits nothing and keeps
its ETag. ``If-Match`` is honoured (``WriteSpec.etag``).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from reservations.kernel.caller import Caller
from reservations.kernel.envelope import StoredEvent
from reservations.kernel.errors import ApiError, FieldProblem, InvalidRequest, NotFound
from reservations.kernel.event_context import by_caller
from reservations.kernel.pipeline import Body, Commit, Committed, Decision, Request, WriteSpec
from reservations.kernel.settings import expiry_warning_minutes, settings
from reservations.kernel.writes import ItemVersion
from reservations.lifecycle.changes import OWNERS, found
from reservations.lifecycle.models import UpdateReservationRequest, parse_update_request
from reservations.lifecycle.rules import events as reservations_events
from reservations.lifecycle.rules import lending
from reservations.lifecycle.rules.access import may_write_reservations
from reservations.lifecycle.rules.history import named_after_change, naming_the_same
from reservations.lifecycle.rules.term import MAX_START_IN_PAST
from reservations.lifecycle.rules.update import (
    UpdateRefusal,
    changes,
    removed_orgs,
    updated,
)
from reservations.lifecycle.views import (
    reservation_answer,
    reservation_view,
    route_reservation_etag,
)
from reservations.lifecycle.writes import ReservationUpdate
from reservations.nodes import NodePorts, NodeSnapshot, Reservation, node_partition, with_events


def decide(
    snapshot: NodeSnapshot | None,
    request: Request[UpdateReservationRequest],
    caller: Caller,
    now: datetime,
) -> NotFound | UpdateRefusal | Decision[ReservationUpdate]:
    """The reservation as changed, its write, and 200 with it and its new ETag; the
    reservation as it is, its ETag kept, and no write, when the body changes nothing."""
    acted_on = found(
        snapshot, request.route, lambda read, _reservation: may_write_reservations(caller, read)
    )
    if isinstance(acted_on, NotFound):
        return acted_on
    read, before = acted_on
    after = updated(read, before, request.body, now)
    if isinstance(after, ApiError):
        return after
    after = rearmed(before, after, now)
    view = reservation_view(after, read.node, now, after.released_unit_ids, after.updated_at)
    answer = reservation_answer(view)
    if after == before:
        return Decision(None, answer)
    after = lending.changed(before, after, now)
    added = set(after.reserved_unit_ids) - set(before.reserved_unit_ids)
    retention = settings().history_retention_days
    named_by = naming_the_same(read.reservations, after)
    write = ReservationUpdate(
        write_id=request.new_id(),
        before=before,
        after=after,
        node=ItemVersion(read.node.id, read.node.version),
        units=tuple(ItemVersion(u.id, u.version) for u in read.units if u.id in added),
        caller_org_id=caller.org_id,
        caller_key_id=caller.key_id,
        owner_org_id=read.node.owner_org_id,
        reason=request.body.reason,
        at=now,
        named_until=named_after_change(before, after, named_by, retention, now),
    )
    return Decision(write, answer)


def rearmed(before: Reservation, after: Reservation, now: datetime) -> Reservation:
    """A term moved re-arms the clock as a create arms it (``lifecycle.rules.clock``): the
    stack's warning minutes now, and this commit as the moment it was armed, so a warning
    moment already passed fires right away with this commit's time. A moved ``startsAt``
    re-arms ``.activated`` and a moved ``endsAt`` ``.expiring`` and ``.expired`` by
    themselves: a moment is fired only at the moment it was fired at."""
    if (after.starts_at, after.ends_at) == (before.starts_at, before.ends_at):
        return after
    return replace(
        after, warning_minutes=expiry_warning_minutes(), armed_at=now.replace(microsecond=0)
    )


def update_events(
    _snapshot: NodeSnapshot | None, write: ReservationUpdate
) -> tuple[StoredEvent, ...]:
    """``reservation.updated``: what changed, for the audience after it and, reduced, for
    each org it no longer names."""
    context = by_caller(write, write.after.node_id, write.owner_org_id, write.write_id)
    return (
        reservations_events.reservation_updated(
            context,
            write.after,
            changes(write.before, write.after),
            removed_orgs(write.before, write.after),
            write.reason,
        ),
    )


def committed(write: ReservationUpdate) -> Committed:
    context = {
        "reservationId": write.after.id,
        "changed": sorted(changes(write.before, write.after)),
    }
    return Committed("reservation updated", context, {"ReservationsUpdated": 1})


def _term_is_timely(body: UpdateReservationRequest, now: datetime) -> None:
    """What the body's times must be against the clock alone, a 400 before any write: an
    ``endsAt`` in the future, a ``startsAt`` at most 5 minutes in the past."""
    starts, ends = body.term()
    if starts is not None and starts.replace(microsecond=0) < now - MAX_START_IN_PAST:
        raise InvalidRequest(
            "startsAt is more than 5 minutes in the past",
            [FieldProblem("startsAt", "must not be more than 5 minutes in the past")],
        )
    if ends is not None and ends.replace(microsecond=0) <= now:
        raise InvalidRequest(
            "endsAt is not in the future", [FieldProblem("endsAt", "must be in the future")]
        )


def _as_sent(body: UpdateReservationRequest) -> object:
    """The fields given, null ones included (a null is a change; an absent field none)."""
    return body.model_dump(mode="json", by_alias=True, exclude_unset=True)


UPDATE: WriteSpec[UpdateReservationRequest, NodeSnapshot | None, ReservationUpdate, NodePorts] = (
    WriteSpec(
        name="Update",
        access=OWNERS,
        body=Body(parse=parse_update_request, document=_as_sent, timely=_term_is_timely),
        decide=decide,
        commit=Commit(
            partition=node_partition, committed=committed, finish=with_events(update_events)
        ),
        conflict="reservation {reservationId} kept changing while changing it",
        # If-Match: the reservation's tag as read (412 after the 404 and a replay, before
        # any refusal; a retry whose first try committed gets its replay).
        etag=route_reservation_etag,
    )
)
