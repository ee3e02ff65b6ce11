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
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from reservations.dal.items import OPEN, STUCK
from reservations.logic.outbox import message
from reservations.logic.ports import Outbox, Sender
from reservations.models.domain import OpenTermination
from reservations.models.messages import SendResult
from reservations.observability import logger, metrics
from reservations.rules.terminations import (
    RedeliveryPolicy,
    deduplication_id,
    gives_up,
    is_due,
)

__all__ = ["Outbox", "Sender", "deliver", "message", "sweep"]


def deliver(
    termination: OpenTermination, now: datetime, outbox: Outbox, send: Sender
) -> SendResult:
    """Send it once more; an accepted send is recorded as a delivery, nothing else is."""
    url = outbox.node_queue_url(termination.node_id)
    if url is None:
        return SendResult.NO_QUEUE
    workload = termination.workload
    dedup = deduplication_id(termination.termination_id, workload.termination_deliveries)
    result = send(url, message(termination, now), dedup)
    if result is SendResult.ACCEPTED:
        outbox.record_delivery(termination, now)
    return result


# The worst case of sweeping one termination: its re-read and its record (DynamoDB, 3 tries
# of at most 1 s to connect and 2 s to read) and its send (SQS, one such try).
SEND_RESERVE_SECONDS = 12.0


def sweep(
    now: datetime,
    policy: RedeliveryPolicy,
    outbox: Outbox,
    send: Sender,
    time_left: Callable[[], float] = lambda: math.inf,
) -> Counter[str]:
    """One pass; counts of what happened (``redelivered``, ``waiting``, ``gave_up``,
    ``deferred``, ...). ``time_left``: seconds left of the invocation."""
    counts: Counter[str] = Counter()
    seen: set[str] = set()  # one given up in this pass may show up again as stuck
    for partition in (OPEN, STUCK):
        for listed in outbox.listed(partition):
            if listed.termination_id in seen:
                continue
            seen.add(listed.termination_id)
            if not is_due(listed.workload, policy, now):
                counts["waiting" if partition == OPEN else "stuck"] += 1
                continue
            if time_left() < SEND_RESERVE_SECONDS:
                counts["deferred"] += 1
                continue
            counts[_sweep_one(listed, now, policy, outbox, send)] += 1
    if counts["deferred"]:
        logger.warning(
            "sweep out of time; the rest wait for the next pass",
            extra={"deferred": counts["deferred"]},
        )
        metrics.add_metric(
            name="TerminationsDeferred", unit=MetricUnit.Count, value=counts["deferred"]
        )
    return counts


def _sweep_one(
    listed: OpenTermination, now: datetime, policy: RedeliveryPolicy, outbox: Outbox, send: Sender
) -> str:
    termination = outbox.read(listed.node_id, listed.workload.id)
    if termination is None or termination.termination_id != listed.termination_id:
        return "closed"  # a report closed it after the index was read
    if not is_due(termination.workload, policy, now):
        return "waiting"  # another sweep got there first
    context = _context(termination)
    if gives_up(termination.workload, policy):
        if not outbox.mark_stuck(termination, now):
            return "changed"  # a report, or another sweep, got there since the re-read
        logger.error("termination delivered without a report: stuck", extra=context)
        metrics.add_metric(name="SweeperGiveUps", unit=MetricUnit.Count, value=1)
        return "gave_up"
    result = deliver(termination, now, outbox, send)
    if result is SendResult.ACCEPTED:
        logger.info("termination redelivered", extra=context)
        metrics.add_metric(name="TerminationsRedelivered", unit=MetricUnit.Count, value=1)
        return "redelivered"
    if result is SendResult.NO_QUEUE:
        logger.warning("termination waits for the node's queue", extra=context)
        metrics.add_metric(name="TerminationsWaitingForQueue", unit=MetricUnit.Count, value=1)
        return "waiting_for_queue"
    logger.error("termination could not be sent; the next sweep tries again", extra=context)
    metrics.add_metric(name="TerminationSendsFailed", unit=MetricUnit.Count, value=1)
    return "unsent"


def _context(termination: OpenTermination) -> dict[str, Any]:
    return {
        "terminationId": termination.termination_id,
        "nodeId": termination.node_id,
        "workloadId": termination.workload.id,
        "deliveries": termination.workload.termination_deliveries,
    }
