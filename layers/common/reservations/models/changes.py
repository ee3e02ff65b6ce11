"""A change to one reservation's own item — a release, a cancel — as the logic decides it
and the DAL writes it: one conditional transaction with its audit record."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from reservations.models.domain import Reservation, ReservationStatus
from reservations.models.writes import ItemVersion, TopologyRead


@dataclass(frozen=True, slots=True)
class ReservationChange:
    """What changes (None: unchanged; when nothing does, only the version is checked and the
    audit record written), and who asked, why, and what they named, for the audit record.
    The write conditions on the reservation's version and on the node's topology as read."""

    change_id: str
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
