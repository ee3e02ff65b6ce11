"""The sweeper: no committed termination is lost between the database and the queue.

It reads the open terminations from their sparse index and re-sends those never marked
queued (after a grace period that leaves the reclaim its own send) and those queued but not
confirmed within the deadline. After ``max_deliveries`` it stops, moves the termination to
``stuck`` (visible in the same index) and raises the SweeperGiveUps metric.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from reservations.config import settings
from reservations.dal import queues
from reservations.dal.terminations import (
    OpenTermination,
    give_up,
    node_queue_url,
    open_terminations,
    record_redelivery,
)
from reservations.models.messages import SpotTermination

logger = Logger()
metrics = Metrics()


def is_due(termination: OpenTermination, now: datetime) -> bool:
    config = settings()
    if termination.last_sent_at is None:
        requested = termination.workload.termination_requested_at or now
        return now - requested >= timedelta(seconds=config.sweeper_grace_seconds)
    return now - termination.last_sent_at >= timedelta(seconds=config.confirm_deadline_seconds)


def sweep(now: datetime) -> Counter[str]:
    """One pass; counts of ``redelivered``, ``unsent``, ``gave_up`` and ``waiting``."""
    counts: Counter[str] = Counter()
    urls: dict[str, str | None] = {}
    for termination in open_terminations():
        if not is_due(termination, now):
            counts["waiting"] += 1
            continue
        workload = termination.workload
        context = {
            "terminationId": workload.termination_id,
            "nodeId": termination.node_id,
            "workloadId": workload.id,
            "deliveries": termination.delivery_attempts,
        }
        if termination.delivery_attempts >= settings().max_deliveries:
            give_up(termination, now)
            logger.error("termination not confirmed after every delivery: stuck", extra=context)
            metrics.add_metric(name="SweeperGiveUps", unit=MetricUnit.Count, value=1)
            counts["gave_up"] += 1
            continue
        if termination.node_id not in urls:
            urls[termination.node_id] = node_queue_url(termination.node_id)
        url = urls[termination.node_id]
        message = _message(termination, now)
        attempt = termination.delivery_attempts + 1
        redelivery = {message.termination_id: f"{message.termination_id}#r{attempt}"}
        sent = url is not None and bool(queues.send_terminations(url, [message], redelivery))
        record_redelivery(termination, sent, now)
        if sent:
            metrics.add_metric(name="TerminationsRedelivered", unit=MetricUnit.Count, value=1)
            logger.info("termination redelivered", extra=context)
            counts["redelivered"] += 1
        else:
            logger.error("termination could not be redelivered", extra=context)
            counts["unsent"] += 1
    return counts


def _message(termination: OpenTermination, now: datetime) -> SpotTermination:
    workload = termination.workload
    return SpotTermination(
        termination_id=workload.termination_id or "",
        node_id=termination.node_id,
        workload_id=workload.id,
        workload_kind=workload.kind,
        unit_ids=list(workload.unit_ids),
        reservation_id=workload.termination_reservation_id or "",
        reason=workload.termination_reason,
        requested_at=workload.termination_requested_at or now,
    )
