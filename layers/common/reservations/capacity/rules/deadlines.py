"""When a reclaim's spot workloads must be stopped: the call's own deadline, and each
workload's, which the promises it was placed with may make later (pure: the commit is passed
in).

A reclaim committed at ``at`` gives each spot workload it terminates the latest of:

- ``at`` plus the call's own notice (its ``noticeSeconds``, or its plan's);
- ``at`` plus the reclaiming reservation's lending policy's notice, as it is now;
- ``at`` plus the workload's ``promisedNoticeSeconds``;
- the workload's placement plus its ``promisedMinRunSeconds``.

The first two are the call's deadline (the answer's ``terminateAt``). A termination under
way keeps the earlier of its deadline and the one a later reclaim would give it, but never
comes before what the workload was promised: its placement plus the minimum run, and its
first request plus the promised notice.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from reservations.nodes import Reservation, Workload, termination_of


def call_deadline(at: datetime, notice_seconds: int, reservation: Reservation) -> datetime:
    """The call's own deadline: ``at`` plus the larger of its notice and the reclaiming
    reservation's policy's (none: 0)."""
    policy = reservation.lending
    policy_notice = policy.notice_seconds if policy is not None else 0
    return at + timedelta(seconds=max(notice_seconds, policy_notice))


def promised_floor(workload: Workload, requested_at: datetime) -> datetime:
    """The earliest the workload may be stopped when asked at ``requested_at``: that plus
    its promised notice, and not before its placement plus its promised minimum run (a
    workload with no placement time, a fleet file's, has only the notice)."""
    floor = requested_at + timedelta(seconds=workload.promised_notice_seconds)
    if workload.created_at is not None:
        floor = max(
            floor, workload.created_at + timedelta(seconds=workload.promised_min_run_seconds)
        )
    return floor


def termination_deadline(workload: Workload, at: datetime, deadline: datetime) -> datetime:
    """A new termination's deadline: the call's ``deadline``, or the workload's promises
    asked at the commit ``at``, whichever is latest."""
    return max(deadline, promised_floor(workload, at))


def moved_earlier(
    terminating: Iterable[Workload], deadline: datetime
) -> tuple[tuple[Workload, datetime], ...]:
    """The terminations under way that a reclaim with the call's ``deadline`` moves earlier,
    each with its new deadline: the call's, but never before its promises counted from its
    first request. Only those due later than that move (one without a deadline is due at
    once and never moves)."""
    moved = []
    for workload in terminating:
        termination = termination_of(workload)
        due = termination.deadline
        if due is None:
            continue
        new = max(deadline, promised_floor(workload, termination.requested_at or due))
        if due > new:
            moved.append((workload, new))
    return tuple(moved)
