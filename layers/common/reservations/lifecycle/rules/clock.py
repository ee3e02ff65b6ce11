"""The clock's moments of a reservation (pure): which of ``reservation.activated``,
``.expiring`` and ``.expired`` it is armed for, when, and which is next.

Everything is derived from the reservation itself (stored status, ``startsAt``, ``endsAt``,
the moments already fired, the warning it was armed with), so any writer that leaves the
item as a whole (a create, a PATCH: ``lifecycle.table.clock.armed_item``) or changes its term or
status re-arms it by writing it, and a cancel (which moves it out of the node's partition,
where nothing is armed) disarms it.

- ``activated`` at ``startsAt``, while it is stored ``pending`` (one created or re-affirmed
  ``active`` says so in that write's own event). A review at that moment passes it without
  an event (:data:`ACTIVATION_PASSED`); a re-affirm into ``active`` after it writes it then.
- ``expiring`` at max(``endsAt`` - W, ``startsAt``, when the term was armed), W the
  reservation's ExpiryWarningMinutes as armed (0: none).
- ``expired`` at ``endsAt``, whatever the status (it is carried by the move into the node's
  history, which takes the reservation out of every index the clock reads).

A moment is fired when the reservation records its kind at that very moment: a term moved
to another moment arms it again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from reservations.nodes import Reservation, ReservationStatus


class ClockKind(StrEnum):
    """A clock moment's kind, as the reservation records it fired (its event's type is
    ``reservation.<kind>``)."""

    ACTIVATED = "activated"
    EXPIRING = "expiring"
    EXPIRED = "expired"


# An activation a review stood in the way of: passed without an event, so the clock moves
# on, and a re-affirm into ``active`` after it writes the event at its own commit.
ACTIVATION_PASSED = "activationPassed"

# The clock index's partitions (``docs/scale.md``): a reservation's is fixed by its id.
CLOCK_SHARDS = 16
# The moment a kind stands for, as its event's ``data`` names it.
MOMENT_NAMES = {
    ClockKind.ACTIVATED: "startsAt",
    ClockKind.EXPIRING: "endsAt",
    ClockKind.EXPIRED: "endsAt",
}
_ORDER = {ClockKind.ACTIVATED: 0, ClockKind.EXPIRING: 1, ClockKind.EXPIRED: 2}


@dataclass(frozen=True, slots=True, order=True)
class ClockMoment:
    """One armed moment: when its event is due (its ``time``), and its kind."""

    at: datetime
    kind: ClockKind

    @property
    def key(self) -> str:
        """Its place in the clock index (sort key): the moment, then the kind, so that two
        moments at one instant are two steps, in the order they are written."""
        return f"{_instant(self.at)}#{_ORDER[self.kind]}{self.kind}"


def _instant(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")


def due_by(now: datetime) -> str:
    """The clock index's bound for what is due at ``now``: every key at ``now`` or before
    ("~" sorts after every kind)."""
    return f"{_instant(now)}#~"


def fired(reservation: Reservation) -> dict[str, datetime]:
    return dict(reservation.clock_fired)


def warning_moment(reservation: Reservation, default_minutes: int) -> datetime | None:
    """When ``.expiring`` is due: None without an ``endsAt`` or with a warning of 0."""
    minutes = (
        reservation.warning_minutes if reservation.warning_minutes is not None else default_minutes
    )
    if reservation.ends_at is None or minutes <= 0:
        return None
    moment = max(reservation.ends_at - timedelta(minutes=minutes), reservation.starts_at)
    if reservation.armed_at is not None:
        moment = max(moment, reservation.armed_at)
    return min(moment, reservation.ends_at)


def armed_moments(reservation: Reservation, default_minutes: int) -> list[ClockMoment]:
    """Every moment the reservation is armed for and has not fired, in the order due."""
    if reservation.status is ReservationStatus.CANCELLED or reservation.retained_until:
        return []
    done = fired(reservation)
    moments: list[ClockMoment] = []
    if (
        reservation.status is ReservationStatus.PENDING
        and done.get(ClockKind.ACTIVATED) != reservation.starts_at
        and done.get(ACTIVATION_PASSED) != reservation.starts_at
    ):
        moments.append(ClockMoment(reservation.starts_at, ClockKind.ACTIVATED))
    warning = warning_moment(reservation, default_minutes)
    if warning is not None and done.get(ClockKind.EXPIRING) != warning:
        moments.append(ClockMoment(warning, ClockKind.EXPIRING))
    if reservation.ends_at is not None:
        moments.append(ClockMoment(reservation.ends_at, ClockKind.EXPIRED))
    return sorted(moments)


def next_moment(reservation: Reservation, default_minutes: int) -> ClockMoment | None:
    """The first armed moment (None: nothing armed, not in the clock index)."""
    moments = armed_moments(reservation, default_minutes)
    return moments[0] if moments else None


def due_moments(reservation: Reservation, default_minutes: int, now: datetime) -> list[ClockMoment]:
    """The armed moments due at ``now``."""
    return [m for m in armed_moments(reservation, default_minutes) if m.at <= now]


def with_fired(reservation: Reservation, kind: str, moment: datetime) -> Reservation:
    """The reservation recording ``kind`` fired (or passed) at ``moment``."""
    done = fired(reservation)
    done[kind] = moment
    return replace(reservation, clock_fired=tuple(sorted(done.items())))


def clock_shard(reservation_id: str) -> str:
    """The clock index partition of a reservation: a stable hash of its id."""
    digest = hashlib.sha256(reservation_id.encode()).digest()
    return f"clock#{int.from_bytes(digest[:4], 'big') % CLOCK_SHARDS:02d}"


def clock_shards() -> tuple[str, ...]:
    return tuple(f"clock#{n:02d}" for n in range(CLOCK_SHARDS))


def fired_map(reservation: Reservation) -> Mapping[str, datetime]:
    return fired(reservation)


def activation_at_reaffirm(reservation: Reservation, now: datetime) -> bool:
    """Whether a re-affirm at ``now`` writes ``.activated`` itself, at its own commit: it
    takes the reservation into ``active`` (its ``startsAt`` has come), the clock has not
    written the activation for that ``startsAt`` (a review stood in its way, or the pass has
    not come yet), and the term was not already active when it was armed (one created or
    moved active gets none)."""
    if reservation.starts_at > now:
        return False
    if fired(reservation).get(ClockKind.ACTIVATED) == reservation.starts_at:
        return False
    armed = reservation.armed_at if reservation.armed_at is not None else reservation.created_at
    return armed < reservation.starts_at
