"""The sweeper: no committed termination is lost between the database and the queue.

It reads the open and the stuck terminations from their sparse index, re-reads each due
one (the index lags behind a report that just closed it) and sends it again. Only sends SQS
accepted count as deliveries: an outage of any length, or a node whose queue is missing,
just waits. After ``max_deliveries`` without a report a termination is flagged stuck
(SweeperGiveUps, alarmed) and still sent at the slow pace until a report closes it.

A pass never outlives its invocation: with less than ``SEND_RESERVE_SECONDS`` left it sends
nothing more, and the terminations still due are counted ``deferred`` for the next pass
(against an SQS that hangs, each send takes its full 3 s; without this, 20 due terminations
would time the function out, metrics and log of the pass lost).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from enum import StrEnum
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from reservations.kernel.envelope import EventContext, StoredEvent
from reservations.kernel.observability import logger, metrics
from reservations.nodes import TerminationState
from reservations.terminations.models import OpenTermination, SendResult
from reservations.terminations.outbox import message, send_ids
from reservations.terminations.ports import Sender, TerminationStore
from reservations.terminations.rules import events as terminations_events
from reservations.terminations.rules.delivery import RedeliveryPolicy, gives_up, is_due


class SweepOutcome(StrEnum):
    """What a pass did with one open termination it listed (the pass counts each)."""

    WAITING = "waiting"  # open, not due yet
    STUCK = "stuck"  # stuck, not due yet
    DEFERRED = "deferred"  # due, but no time left in this pass
    CLOSED = "closed"  # a report closed it after the index was read
    CHANGED = "changed"  # a report, or another sweep, got there since the re-read
    GAVE_UP = "gave_up"  # delivered as often as it may be: flagged stuck
    REDELIVERED = "redelivered"
    WAITING_FOR_QUEUE = "waiting_for_queue"  # the node has no queue (yet)
    UNSENT = "unsent"  # SQS did not take it; the next pass tries again


def deliver(
    termination: OpenTermination, now: datetime, terminations: TerminationStore, send: Sender
) -> SendResult:
    """Send it once more; an accepted send is recorded as a delivery, nothing else is."""
    url = terminations.node_queue_url(termination.node_id)
    if url is None:
        return SendResult.NO_QUEUE
    dedup, group = send_ids(termination)
    if termination.termination.deadline_changes:
        result = send(url, message(termination, now), dedup, group_id=group)
    else:
        result = send(url, message(termination, now), dedup)
    if result is SendResult.ACCEPTED:
        terminations.record_delivery(termination, now)
    return result


# The worst case of sweeping one termination: its re-read and its record (DynamoDB, 3 tries
# of at most 1 s to connect and 2 s to read) and its send (SQS, one such try).
SEND_RESERVE_SECONDS = 12.0


def sweep(
    now: datetime,
    policy: RedeliveryPolicy,
    terminations: TerminationStore,
    send: Sender,
    time_left: Callable[[], float] = lambda: math.inf,
) -> Counter[SweepOutcome]:
    """One pass; how many of each outcome. ``time_left``: seconds left of the invocation."""
    counts: Counter[SweepOutcome] = Counter()
    seen: set[str] = set()  # one given up in this pass may show up again as stuck
    for state in (TerminationState.OPEN, TerminationState.STUCK):
        for listed in terminations.listed(state):
            if listed.termination_id in seen:
                continue
            seen.add(listed.termination_id)
            if not is_due(listed.workload, policy, now):
                counts[_NOT_DUE[state]] += 1
                continue
            if time_left() < SEND_RESERVE_SECONDS:
                counts[SweepOutcome.DEFERRED] += 1
                continue
            counts[_sweep_one(listed, now, policy, terminations, send)] += 1
    if deferred := counts[SweepOutcome.DEFERRED]:
        logger.warning(
            "sweep out of time; the rest wait for the next pass", extra={"deferred": deferred}
        )
        metrics.add_metric(name="TerminationsDeferred", unit=MetricUnit.Count, value=deferred)
    return counts


_NOT_DUE = {TerminationState.OPEN: SweepOutcome.WAITING, TerminationState.STUCK: SweepOutcome.STUCK}


def _sweep_one(
    listed: OpenTermination,
    now: datetime,
    policy: RedeliveryPolicy,
    terminations: TerminationStore,
    send: Sender,
) -> SweepOutcome:
    termination = terminations.read(listed.node_id, listed.workload.id)
    if termination is None or termination.termination_id != listed.termination_id:
        return SweepOutcome.CLOSED
    if not is_due(termination.workload, policy, now):
        return SweepOutcome.WAITING  # another sweep got there first
    context = _context(termination)
    if gives_up(termination.workload, policy):
        stuck = stuck_event(termination, terminations.node_owner(termination.node_id), now)
        if not terminations.mark_stuck(termination, now, stuck):
            return SweepOutcome.CHANGED
        logger.error("termination delivered without a report: stuck", extra=context)
        metrics.add_metric(name="SweeperGiveUps", unit=MetricUnit.Count, value=1)
        return SweepOutcome.GAVE_UP
    result = deliver(termination, now, terminations, send)
    if result is SendResult.ACCEPTED:
        logger.info("termination redelivered", extra=context)
        metrics.add_metric(name="TerminationsRedelivered", unit=MetricUnit.Count, value=1)
        return SweepOutcome.REDELIVERED
    if result is SendResult.NO_QUEUE:
        logger.warning("termination waits for the node's queue", extra=context)
        metrics.add_metric(name="TerminationsWaitingForQueue", unit=MetricUnit.Count, value=1)
        return SweepOutcome.WAITING_FOR_QUEUE
    logger.error("termination could not be sent; the next sweep tries again", extra=context)
    metrics.add_metric(name="TerminationSendsFailed", unit=MetricUnit.Count, value=1)
    return SweepOutcome.UNSENT


def stuck_event(
    termination: OpenTermination, owner_org_id: str | None, now: datetime
) -> StoredEvent:
    """``workload.termination_stuck``: its change id names the termination and the deliveries
    it was flagged after (``<terminationId>#stuck#<deliveries>``): flagged again after a
    failed report reopened it, it is another event."""
    workload = termination.workload
    deliveries = termination.termination.deliveries
    change_id = f"{termination.termination_id}#stuck#{deliveries}"
    context = EventContext(termination.node_id, owner_org_id or "", change_id, now)
    return terminations_events.termination_stuck(context, workload, deliveries)


def _context(termination: OpenTermination) -> dict[str, Any]:
    return {
        "terminationId": termination.termination_id,
        "nodeId": termination.node_id,
        "workloadId": termination.workload.id,
        "deliveries": termination.termination.deliveries,
    }
