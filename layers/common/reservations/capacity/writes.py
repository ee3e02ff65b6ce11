"""The reclaim's write and a lending policy's change on a node's partition, in domain terms
(no table layout): conditional on the versions of the items they were decided from
(``capacity.table`` commits them)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from reservations.kernel.writes import ItemVersion
from reservations.nodes import EventedWrite, LendingPolicy, Reservation, TopologyRead


@dataclass(frozen=True, slots=True)
class NewTermination:
    """A running spot workload that the write moves to ``terminating`` under this id."""

    workload: ItemVersion
    termination_id: str
    # The deadline (the reclaim's commit plus its notice); None: the commit itself.
    terminate_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class DeadlineChange:
    """A workload already terminating whose deadline a reclaim with a shorter notice moves
    earlier: same termination, new ``terminate_at``, its ``changes``-th such move (the
    outbox sends it again as a new message)."""

    workload: ItemVersion
    termination_id: str
    terminate_at: datetime
    changes: int


@dataclass(frozen=True, slots=True)
class ReclaimAudit:
    """What the reclaim says it did (its log line, its metrics, its event)."""

    unit_ids: tuple[str, ...]
    released_before: tuple[str, ...]
    terminated: tuple[str, ...]
    skipped: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ReclaimWrite(EventedWrite):
    """One reclaim: the reservation's releases (None: unchanged, only its version checked),
    version checks on the named units and every workload decided from, the terminations,
    and what its event says it did."""

    write_id: str
    node_id: str
    reservation: ItemVersion
    topology: TopologyRead
    released_after: tuple[str, ...] | None
    units: tuple[ItemVersion, ...]
    terminations: tuple[NewTermination, ...]
    unchanged_workloads: tuple[ItemVersion, ...]
    reason: str | None
    audit: ReclaimAudit
    caller_org_id: str
    caller_key_id: str
    at: datetime
    # The reservation's managers, kept on each workload it terminates: they see the
    # termination's end too, when the reservation may be gone.
    managing_org_ids: tuple[str, ...] = ()
    # Terminations under way whose deadline this reclaim moves earlier.
    deadline_changes: tuple[DeadlineChange, ...] = ()
    # This call's deadline: ``at`` plus its notice (None: ``at``).
    terminate_at: datetime | None = None
    # The reservation as its lending policy keeps it after the units taken back wait
    # (``capacity.rules.idle``); None without a policy, or when nothing was taken back.
    lending_after: Reservation | None = None


@dataclass(frozen=True, slots=True)
class PolicyChange(EventedWrite):
    """A reservation's lending policy set (``after``) or removed (``after`` None), where the
    reservation is still at its version read and the node's topology as read (its effective
    status allowed the change); the reservation's version is bumped, so its tag changes."""

    write_id: str
    node_id: str
    reservation: ItemVersion
    topology: TopologyRead
    after: LendingPolicy | None
    caller_org_id: str
    caller_key_id: str
    at: datetime
    # The reservation as the policy leaves it for lending by the clock (its idle time, its
    # place in the lending index: ``capacity.rules.idle.after_policy``).
    lending_after: Reservation | None = None


@dataclass(frozen=True, slots=True)
class LendingWrite(EventedWrite):
    """A lending pass on one reservation (``capacity.lending``): the units it lends (none:
    only its place in the lending index moves on), the reservation as it leaves it, where
    the reservation is still at its version and its place in the index as read, each lent
    unit at its version read (a claim since moves it), and the node's topology as read."""

    write_id: str
    node_id: str
    reservation: ItemVersion
    lend_read: datetime | None
    topology: TopologyRead
    unit_ids: tuple[str, ...]
    units: tuple[ItemVersion, ...]
    after: Reservation
    at: datetime
