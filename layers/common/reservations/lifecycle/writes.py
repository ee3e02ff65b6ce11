"""The writes on one reservation of a node's partition, in domain terms (no table layout):
a create, a change (release, cancel), a PATCH, a re-affirm, a move to the node's history,
a moment of the clock; each conditional on the versions of the items it was decided from
(``reservations.table`` commits them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime

from reservations.kernel.writes import ItemVersion
from reservations.nodes import EventedWrite, Reservation, ReservationStatus, TopologyRead


@dataclass(frozen=True, slots=True)
class ReservationCreate(EventedWrite):
    """A new reservation, conditioned on the node item's version (bumped, so two creates on
    one node serialize) and on the version of every unit it was decided from."""

    reservation: Reservation
    node: ItemVersion
    units: tuple[ItemVersion, ...]
    caller_org_id: str
    caller_key_id: str
    # The write's moment, to the millisecond its event keeps (the reservation's own times are
    # kept to the second: its ``reservation.created`` is not, so the node's feed stays in
    # the order its writes committed in).
    at: datetime
    # The node's owner as read (the node's version holds it still at the commit): the
    # node's list access keeps it beside the orgs the reservation names.
    owner_org_id: str
    # Each org the reservation names, with until when the node's list access names it:
    # the latest end among it and the node's reservations as read naming the org
    # (``rules.history.named_after_create``; the node's version holds what was read).
    named_until: Mapping[str, datetime] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ReaffirmWrite(EventedWrite):
    """A needs-review reservation confirmed on the node's current topology: it takes the
    node's generation, its stored status by the clock, and no releases; conditioned on the
    reservation and on the node item (whose version every topology change bumps)."""

    write_id: str
    node_id: str
    reservation: ItemVersion
    node: ItemVersion
    status: ReservationStatus
    topology_gen: int | None
    reason: str | None
    caller_org_id: str
    caller_key_id: str
    at: datetime
    # The reservation as re-affirmed, for the clock (``lifecycle.rules.clock``): its moments
    # fired (an activation the re-affirm writes itself recorded) and, as read, its place in
    # the clock's index (``clock_read``), which the write conditions on and moves on from.
    clock: Reservation | None = field(default=None, kw_only=True)


@dataclass(frozen=True, slots=True)
class ReservationChange(EventedWrite):
    """A change to one reservation's own item — a release, a cancel: what changes (None:
    unchanged; when nothing does, only the version is checked and the event written),
    and who asked, why, and what they named, for its event. The write
    conditions on the reservation's version and on the node's topology as read."""

    write_id: str
    action: str
    node_id: str
    reservation: ItemVersion
    topology: TopologyRead
    released_after: tuple[str, ...] | None
    status_after: ReservationStatus | None
    reason: str | None
    caller_org_id: str
    caller_key_id: str
    unit_ids: tuple[str, ...]
    released_before: tuple[str, ...]
    status_before: ReservationStatus
    at: datetime
    # A change that ends the reservation (a cancel) moves it out of the node's partition
    # into its history, as it leaves it; None for a change that keeps it there.
    ended: Reservation | None = None
    # With ``ended``: the orgs whose moment in the node's list access the end brings
    # forward, each with its new "named until" (``rules.history.named_after_end``; empty
    # when none moves); the node's reservations as read that name one of its orgs longer
    # (their versions decide those moments, so the write checks them); and the node's
    # version read (a create since, which names orgs again, bumps it).
    named_until: Mapping[str, datetime] = field(default_factory=dict)
    named_deciding: tuple[ItemVersion, ...] = ()
    node_version: int | None = None
    # A release's reservation as its lending policy keeps it (the units' records: a
    # release is a lending); None without a policy.
    lending_after: Reservation | None = None

    @property
    def writes_reservation(self) -> bool:
        return self.released_after is not None or self.status_after is not None

    def applied_to(self, reservation: Reservation) -> Reservation:
        """The reservation as the write leaves it."""
        if not self.writes_reservation:
            return reservation
        return replace(
            reservation,
            status=self.status_after or reservation.status,
            released_unit_ids=(
                reservation.released_unit_ids
                if self.released_after is None
                else self.released_after
            ),
            updated_at=self.at,
            version=reservation.version + 1,
        )


@dataclass(frozen=True, slots=True)
class ReservationUpdate(EventedWrite):
    """A PATCH: the reservation written whole as the change leaves it (``after``, one
    version on), where it is still at the version read (``before``); the node item at its
    version read, bumped (a create, another change or a node update since makes it fail,
    so overlap and topology are decided on what is there); every added unit at its version
    read (a placement since claimed it); and the orgs whose moment in the node's list access
    the change moves on (newly named, or named longer), each with its new moment."""

    write_id: str
    before: Reservation
    after: Reservation
    node: ItemVersion
    units: tuple[ItemVersion, ...]
    caller_org_id: str
    caller_key_id: str
    owner_org_id: str
    reason: str | None
    at: datetime
    named_until: Mapping[str, datetime] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HistoryMove(EventedWrite):
    """An expired reservation leaving the node's partition for its history, as it was read
    (the move conditions on that version, so a write since makes it wait for the next
    pass; a move already made finds nothing to move)."""

    reservation: Reservation
    at: datetime
    # No event: an expiry is no one's change (the reservation's effective status said it).


@dataclass(frozen=True, slots=True)
class ClockFire(EventedWrite):
    """One moment of the clock (``lifecycle.rules.clock``) written: its event (``events``), and
    the reservation (``after``) recording it fired and moving on to its next moment, where
    it is still as read (its version and its place in the clock index) and, for an
    activation, the node's topology still as read (a review since would forbid it). The
    reservation's version stays: its object does not change."""

    read: Reservation
    after: Reservation
    topology: TopologyRead | None = None
