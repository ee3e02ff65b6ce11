"""Which report closes which termination and what it frees; when an open termination is
sent again, when it is flagged stuck (only after deliveries no report answered), and under
which de-duplication id: pure rules, the clock passed in."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from reservations.kernel.writes import ItemVersion
from reservations.nodes import NodeSnapshot, Unit, Workload, WorkloadState, termination_of
from reservations.terminations.ids import is_termination_id
from reservations.terminations.writes import HandOver, LetGo


def closed_by(
    workloads: Iterable[Workload], workload_id: str, termination_id: str
) -> Workload | None:
    """The workload whose open termination a report closes: the same workload, still
    terminating under the same termination id. None for a duplicate or late report, or one
    for a termination this node never had: such a report changes nothing."""
    for workload in workloads:
        if workload.id == workload_id:
            open_here = workload.state is WorkloadState.TERMINATING
            same = termination_of(workload).id == termination_id
            return workload if open_here and same else None
    return None


def freed_units(workload: Workload, units: Iterable[Unit]) -> tuple[Unit, ...]:
    """The units a closed termination frees: the workload's own, and only those still
    claimed by it (a unit already handed to another workload keeps its claim)."""
    return tuple(
        unit for unit in units if unit.id in workload.unit_ids and unit.claimed_by == workload.claim
    )


def gpus_held(workload: Workload, units: Iterable[Unit]) -> int:
    """The GPUs the workload's units sell as the node states them now (``sellableGpus``; a
    unit no longer on the node, none): what its own use is counted on when it ends."""
    named = set(workload.unit_ids)
    return sum(unit.sellable_gpus for unit in units if unit.id in named)


def let_go(workload: Workload, snapshot: NodeSnapshot) -> LetGo:
    """What the end of ``workload`` (a report, or the scheduler's end) does: each unit it
    still claims that a take-back holds for a waiting workload is handed over to that
    workload, every other one is freed; each workload waiting on it waits on it no more,
    and becomes running when it waited on nothing else (its ``workload.started``). A hold
    whose waiting workload is gone is dropped with the freeing."""
    waiting = {w.claim: w for w in snapshot.workloads if w.state is WorkloadState.WAITING}
    claimed = freed_units(workload, snapshot.units)
    handed = tuple(
        HandOver(ItemVersion(u.id, u.version), u.held_for)
        for u in claimed
        if u.held_for is not None and u.held_for in waiting
    )
    handed_ids = {h.unit.id for h in handed}
    waiters = []
    for waiter in waiting.values():
        still = tuple(entry for entry in waiter.waiting_for if entry[0] != workload.id)
        if len(still) == len(waiter.waiting_for):
            continue
        state = WorkloadState.WAITING if still else WorkloadState.RUNNING
        waiters.append(replace(waiter, waiting_for=still, state=state))
    return LetGo(
        freed=tuple(ItemVersion(u.id, u.version) for u in claimed if u.id not in handed_ids),
        handed=handed,
        waiters=tuple(sorted(waiters, key=lambda w: w.id)),
    )


# SQS's limit for a FIFO MessageDeduplicationId.
MAX_DEDUPLICATION_ID = 128


@dataclass(frozen=True, slots=True)
class RedeliveryPolicy:
    """The sweeper's pace: ``grace`` leaves the reclaim its own send, ``confirm_deadline``
    is how long a node may take to report, ``stuck_resend`` the slow pace once flagged."""

    grace: timedelta
    confirm_deadline: timedelta
    stuck_resend: timedelta
    max_deliveries: int


def is_due(workload: Workload, policy: RedeliveryPolicy, now: datetime) -> bool:
    """Whether the sweeper should act on this terminating workload now: its first send
    ``grace`` after the request (the reclaim's own send may have been lost, and the node
    needs the message before the deadline), later ones ``confirm_deadline`` after both the
    last send and the deadline."""
    termination = termination_of(workload)
    last = termination.last_delivered_at
    if termination.deliveries == 0 or last is None:
        requested = termination.requested_at
        return requested is None or now - requested >= policy.grace
    if termination.stuck_at is not None:
        return now - last >= policy.stuck_resend
    # The node stops it at its deadline, not before: a report cannot come earlier, so the
    # wait for one starts then (a long notice is never sent again, or flagged, before it).
    deadline = termination.deadline
    since = max(last, deadline) if deadline is not None else last
    return now - since >= policy.confirm_deadline


def unreported_deliveries(workload: Workload) -> int:
    """Accepted deliveries since the node last reported (all of them if it never did).

    A ``failed`` report proves the node alive and trying, so only the silence after it
    counts. The delivery count itself is never reset: the de-duplication ids derive from it.
    """
    termination = termination_of(workload)
    return max(termination.deliveries - termination.reported_deliveries, 0)


def gives_up(workload: Workload, policy: RedeliveryPolicy) -> bool:
    """Delivered ``max_deliveries`` times since the last report (or since the request, if
    none came), and not flagged yet."""
    return (
        termination_of(workload).stuck_at is None
        and unreported_deliveries(workload) >= policy.max_deliveries
    )


def deduplication_id(termination_id: str, deliveries: int, deadline_changes: int = 0) -> str:
    """The FIFO de-duplication id of the send that follows ``deliveries`` accepted ones.

    The first is the termination id itself, so SQS drops it if the reclaim's own send made
    it (within five minutes); later ones are ``<id>#r<n>``, which the window cannot swallow.
    A failed send leaves ``deliveries`` unchanged, so its retry keeps the id: a send whose
    answer was lost is then not queued twice. An id that is not a well-formed termination
    id (too long for the suffix) is hashed: SQS refuses anything over 128 characters.

    A deadline a later reclaim moved earlier is a new message: its ids start from
    ``<id>#d<n>`` (its ``n``-th move), which no window holds yet.
    """
    base = send_base(termination_id, deadline_changes)
    plain = base if deliveries == 0 else f"{base}#r{deliveries}"
    if is_termination_id(termination_id) and len(plain) <= MAX_DEDUPLICATION_ID:
        return plain
    return "sha256-" + hashlib.sha256(plain.encode()).hexdigest()


def send_base(termination_id: str, deadline_changes: int) -> str:
    """What a termination's sends are named after: its id, then ``<id>#d<n>`` once a later
    reclaim moved its deadline ``n`` times."""
    return termination_id if deadline_changes == 0 else f"{termination_id}#d{deadline_changes}"


def message_group(workload_id: str, termination_id: str, deadline_changes: int) -> str:
    """The FIFO message group of a termination's sends. The first deadline's sends share the
    workload's group, so the node gets them one after the other, as always. A moved deadline
    gets a group of its own: SQS holds back a group's later messages while an earlier one is
    in flight, and the node holds the first message (its visibility extended) until its
    deadline, which would hold the earlier deadline back until the later one had passed.
    SQS takes at most 128 characters: a longer group is hashed."""
    if deadline_changes == 0:
        return workload_id
    group = f"{workload_id}#{send_base(termination_id, deadline_changes)}"
    if len(group) <= MAX_DEDUPLICATION_ID:
        return group
    return "sha256-" + hashlib.sha256(group.encode()).hexdigest()
