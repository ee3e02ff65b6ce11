"""The domain as stored: a node's partition and API keys, free of any transport concern."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol

from reservations.kernel.times import to_millisecond

# The kind is part of the message contract; its one definition lives with the messages.
from termination_messages import WorkloadKind as WorkloadKind


class ReservationStatus(StrEnum):
    PENDING = "pending"
    ACTIVE = "active"
    EXPIRED = "expired"
    CANCELLED = "cancelled"
    NEEDS_REVIEW = "needs-review"


class WorkloadState(StrEnum):
    RUNNING = "running"
    # Placed by a take-back (``workloads.rules.take_back``): it claims the units that were
    # free and waits for the spot workloads on the others to stop; the units they still
    # claim are held for it, and the last report hands it the last claim.
    WAITING = "waiting"
    TERMINATING = "terminating"
    TERMINATED = "terminated"


class TerminationState(StrEnum):
    """Where an open termination stands: ``open`` (delivered at the sweeper's pace) or
    ``stuck`` (delivered as often as it may be without a report; still sent, slowly)."""

    OPEN = "open"
    STUCK = "stuck"


class Tier(StrEnum):
    SPOT = "spot"
    RESERVED = "reserved"
    ON_DEMAND = "on-demand"


RESERVABLE_ALLOC_CLASSES = frozenset({"vfio-group", "device-request"})
CLAIMING_STATES = frozenset(
    {WorkloadState.RUNNING, WorkloadState.TERMINATING, WorkloadState.WAITING}
)


@dataclass(frozen=True, slots=True)
class Node:
    id: str
    owner_org_id: str
    topology_gen: int | None = None
    queue_url: str | None = None
    version: int = 1
    # Set when the node is registered and on every update (absent on older items).
    created_at: datetime | None = None
    updated_at: datetime | None = None
    # The units on the node, each with the generation at which it last changed in what a
    # reservation is sold (0: as registered or loaded). A reservation of an older generation
    # on a changed or missing unit is under review (rules.status). None on a node item
    # written before the node kept it: every unit item counts, none as changed.
    unit_changed_at: Mapping[str, int] | None = None
    # How many placements the node has had: each adds one, and an update conditions on it,
    # so that a unit claimed after the update read the node is never removed.
    placements: int = 0


class UnitGenerations(Protocol):
    """Where a reservation's derived review is read from: each unit of the node with the
    generation it last changed at. The node item keeps it, and its list access item a copy
    written in the same transaction."""

    @property
    def unit_changed_at(self) -> Mapping[str, int] | None: ...


@dataclass(frozen=True, slots=True)
class Unit:
    id: str
    alloc_class: str
    gpu_model_id: str
    sellable_gpus: int
    sellable: bool
    gpu_model_name: str | None = None
    not_sellable_reason: str | None = None
    claimed_by: str | None = None
    version: int = 1
    # When its last workload let it go (an end, or the node's report); None: not since it
    # was loaded. A lending policy counts a unit's idle time from it.
    freed_at: datetime | None = None
    # The claim (``vm:<id>``) of the waiting workload a take-back holds the unit for while
    # the spot workload that claims it stops: nothing else may be placed on it, and the
    # spot workload's end hands its claim over.
    held_for: str | None = None


@dataclass(frozen=True, slots=True)
class UnitLending:
    """What a reservation's lending policy keeps of one of its units (``capacity.rules.idle``):
    when it joined the reservation (None: with the reservation), when it was last lent, the
    end of its wait after a take-back, and how many take-backs in a row came within an hour
    of a lending."""

    joined_at: datetime | None = None
    lent_at: datetime | None = None
    relend_at: datetime | None = None
    take_backs: int = 0


@dataclass(frozen=True, slots=True)
class LendingPolicy:
    """A reservation's lending policy (the lending slice sets it): whether idle units are
    lent by themselves, after how long, how many are never lent, and what the reservation
    promises every spot workload placed on its lent units (a notice, a minimum run)."""

    auto: bool
    idle_seconds: int = 900
    keep_unlent: int = 0
    notice_seconds: int = 0
    min_run_seconds: int = 0
    relend_after_seconds: int = 300


@dataclass(frozen=True, slots=True)
class Reservation:
    id: str
    node_id: str
    status: ReservationStatus
    starts_at: datetime
    created_at: datetime
    updated_at: datetime
    ends_at: datetime | None = None
    allowed_org_ids: tuple[str, ...] = ()
    managing_org_ids: tuple[str, ...] = ()
    reserved_unit_ids: tuple[str, ...] = ()
    released_unit_ids: tuple[str, ...] = ()
    contract_ref: str | None = None
    reason: str | None = None
    topology_gen: int | None = None
    version: int = 1
    lending: LendingPolicy | None = None
    # Lending by the clock (``capacity.rules.idle``): when every unit's idle time last
    # started afresh (``auto`` turned on, a re-affirm), each unit's lending record, and the
    # reservation's place in the lending index (``lendAt``): a moment no later than the
    # earliest at which a pass may have something to do (an early one costs a read; the
    # writers that can make a unit due sooner set it to their commit).
    lending_since: datetime | None = None
    lending_units: tuple[tuple[str, UnitLending], ...] = ()
    lend_at: datetime | None = None
    # An ended reservation in the node's history: readable until then (the table's TTL
    # deletes it some time after; readers treat it as gone from this moment). None while
    # it is in the node's partition.
    retained_until: datetime | None = None
    # The clock (``lifecycle.rules.clock``): the moments whose event is written (or, for an
    # activation a review stood in the way of, passed), each kind with the moment; the
    # ExpiryWarningMinutes its end was armed with (None: an item written before, armed
    # with the stack's); and when its term was last armed (its create, or the change that
    # moved it): a warning moment already passed then is that commit's.
    clock_fired: tuple[tuple[str, datetime], ...] = ()
    warning_minutes: int | None = None
    armed_at: datetime | None = None
    # Its place in the clock's index as read (``clockAt``; None: not there), which a write
    # carrying the clock's events conditions on. Writers recompute it; they never copy it.
    clock_read: str | None = field(default=None, compare=False)

    def retained_at(self, now: datetime) -> bool:
        """Whether it is still readable: live, or history within its retention."""
        return self.retained_until is None or now < self.retained_until


@dataclass(frozen=True, slots=True)
class Termination:
    """A workload's termination, as one value: its id and what its message carries (the
    reclaiming reservation, the reason, when it was asked for), the reservation's managers
    (its ``workload.terminated`` is theirs too), and the outbox's record of it."""

    id: str
    reservation_id: str | None = None
    reason: str | None = None
    requested_at: datetime | None = None
    managing_org_ids: tuple[str, ...] = ()
    # The deadline (``requested_at`` plus the reclaim's notice, to the millisecond; None on
    # items older than notices: then it is ``requested_at``), and how many later reclaims
    # moved it earlier (each one is a new message: its de-duplication id says which).
    terminate_at: datetime | None = None
    deadline_changes: int = 0
    # The sweeper's record: sends SQS accepted (the reclaim's own send is not counted, it
    # cannot be told from a lost one), the last of them, and when it was flagged stuck.
    deliveries: int = 0
    last_delivered_at: datetime | None = None
    stuck_at: datetime | None = None
    # The node's last ``failed`` report: how many of those deliveries had been made when it
    # came (giving up counts only the deliveries since), when it was applied, and how many
    # such reports there were (a report is proof the node is alive, even if not done).
    reported_deliveries: int = 0
    last_reported_at: datetime | None = None
    failed_reports: int = 0

    @property
    def deadline(self) -> datetime | None:
        """When the node must have stopped it: ``terminate_at``, else when it was asked."""
        return self.terminate_at or self.requested_at


@dataclass(frozen=True, slots=True)
class WorkloadUse:
    """A workload's own use, as its end states it: from when it began to use its units
    (``used_from``) to the commit of the write that ended it (``used_to``), both to the
    millisecond, and ``gpu_ms``: that span in whole milliseconds times the GPUs its units
    sell (``sellableGpus``, as the node states them at the end)."""

    used_from: datetime
    used_to: datetime
    gpu_ms: int


@dataclass(frozen=True, slots=True)
class Workload:
    id: str
    kind: WorkloadKind
    tier: Tier
    org_id: str
    unit_ids: tuple[str, ...]
    state: WorkloadState
    # Set while it is terminating (and kept on the workload's history when it ends).
    termination: Termination | None = None
    version: int = 1
    # When the scheduler placed it (absent for workloads a fleet file states directly).
    created_at: datetime | None = None
    # What a spot workload was promised when it was placed (``nodes.rules.promises``): the
    # notice any reclaim gives it, and the run no reclaim cuts short (from ``created_at``).
    # Fixed then; 0 on items older than promises and on every other tier.
    promised_notice_seconds: int = 0
    promised_min_run_seconds: int = 0
    # While it is waiting: each spot workload it waits on, with that workload's termination
    # id and deadline as of the placement (``(workloadId, terminationId, terminateAt)``);
    # each end of one drops it, and the last makes the workload running.
    waiting_for: tuple[tuple[str, str, datetime], ...] = ()
    # When its use began, to the millisecond: the commit of the placement that made it
    # running, or of the write that started it (its ``workload.started``). None while it
    # waits, and on items from before it was kept (:meth:`use_until` says what then).
    used_from: datetime | None = None

    def use_until(self, at: datetime, gpus: int) -> WorkloadUse:
        """Its own use, ended at ``at`` (the ending write's commit) on ``gpus`` GPUs. From
        ``used_from``; an item from before it was kept counts from ``created_at`` (its
        placement, to the second; a workload that waited before then, from its placement
        too), and one with neither (a fleet file's, stated), or a workload still waiting,
        used nothing: from the end itself, 0."""
        end = to_millisecond(at)
        fallback = None if self.state is WorkloadState.WAITING else self.created_at
        start = min(to_millisecond(self.used_from or fallback or end), end)
        return WorkloadUse(start, end, (end - start) // timedelta(milliseconds=1) * gpus)

    @property
    def termination_state(self) -> TerminationState | None:
        """Open or stuck while it is terminating; None otherwise."""
        if self.state is not WorkloadState.TERMINATING:
            return None
        if self.termination is not None and self.termination.stuck_at is not None:
            return TerminationState.STUCK
        return TerminationState.OPEN

    @property
    def claiming(self) -> bool:
        """Whether it claims its units: running, terminating, or waiting (a take-back's:
        the units that were free; those a spot workload still claims are held for it)."""
        return self.state in CLAIMING_STATES

    @property
    def claim(self) -> str:
        """What a unit held by this workload shows as ``claimedBy``: ``vm:<id>`` or ``pod:<id>``."""
        return f"{self.kind.value}:{self.id}"


# What a workload with no termination reads as: nothing asked, delivered or reported.
NO_TERMINATION = Termination("")


def termination_of(workload: Workload) -> Termination:
    """The workload's termination, or :data:`NO_TERMINATION` when it has none."""
    return workload.termination or NO_TERMINATION


@dataclass(frozen=True, slots=True)
class NodeSnapshot:
    """Everything about one node that the endpoints decide from, read in one Query."""

    node: Node
    units: tuple[Unit, ...] = ()
    reservations: tuple[Reservation, ...] = ()
    workloads: tuple[Workload, ...] = ()
    # Unit items the node no longer lists: left by an update that had no room in its one
    # transaction to delete them. No call sees them; the next update deletes them.
    unlisted_units: tuple[Unit, ...] = ()


@dataclass(frozen=True, slots=True)
class ListAccess:
    """What every page of a node's reservation list reads with it, kept in the node's
    partition after everything else: who may list (the node's owner, and every org its
    reservations name in ``allowedOrgIds`` or ``managingOrgIds``, whatever their status,
    with the moment until which one of them names it: the latest end of their retention,
    ``lifecycle.rules.history.named_until``), and each unit's generation of last change as
    the node item keeps it, which the page's effective statuses are derived from
    (``nodes.rules.status``; None on an item written before the node kept them)."""

    owner_org_id: str
    named_until: Mapping[str, datetime] = field(default_factory=dict)
    unit_changed_at: Mapping[str, int] | None = None
    # The orgs the node's workloads ran for (never decides the list: the node's event
    # feed lets them in, to their workloads' events).
    workload_org_ids: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class ReservationsRead:
    """A page of a node's reservations in id order, from some point on, read with the
    node's list access (None: there is no such node); ``more`` when the read stopped
    before the last reservation."""

    access: ListAccess | None
    reservations: tuple[Reservation, ...]
    more: bool


@dataclass(frozen=True, slots=True)
class ReviewScope:
    """What a node update's reviews are derived from, bounded by the node's units (at most
    64 of each), never by its reservations: the write's id (the derived events' ids follow
    from it), the generation it set, the units it changed or removed, and each unit's
    generation of last change before and after it (None: a node item that kept none). The
    relay reads the node's reservations and judges each against it (``nodes.rules.topology``)."""

    change_id: str
    topology_gen: int | None
    unit_ids: frozenset[str]
    before: Mapping[str, int] | None
    after: Mapping[str, int]

    def to_json(self) -> str:
        return json.dumps(
            {
                "changeId": self.change_id,
                "topologyGen": self.topology_gen,
                "unitIds": sorted(self.unit_ids),
                "before": None if self.before is None else dict(sorted(self.before.items())),
                "after": dict(sorted(self.after.items())),
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> ReviewScope:
        fields = json.loads(text)
        before = fields["before"]
        return cls(
            change_id=fields["changeId"],
            topology_gen=fields["topologyGen"],
            unit_ids=frozenset(fields["unitIds"]),
            before=None if before is None else {str(k): int(v) for k, v in before.items()},
            after={str(k): int(v) for k, v in fields["after"].items()},
        )
