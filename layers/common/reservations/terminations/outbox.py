"""The outbox: a terminating workload is the message to send, on the reclaim's path and the
sweeper's alike, built here once."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from aws_lambda_powertools.metrics import MetricUnit

from reservations.kernel.observability import logger, metrics
from reservations.kernel.times import to_millisecond
from reservations.nodes import Node
from reservations.terminations.models import OpenTermination, SpotTermination
from reservations.terminations.ports import BatchSender
from reservations.terminations.rules.delivery import deduplication_id, message_group


def message(termination: OpenTermination, now: datetime) -> SpotTermination:
    """The spot-termination message the outbox item stands for.

    ``requestedAt`` and ``terminateAt`` are to the millisecond, as the table keeps them:
    the reclaim builds this from its write, the sweeper from the table, and the two sends
    of one termination must say the same. An item from before deadlines were kept has
    none: its deadline is its request, as it was then.
    """
    workload, record = termination.workload, termination.termination
    requested = to_millisecond(record.requested_at or now)
    deadline = to_millisecond(record.terminate_at) if record.terminate_at else requested
    return SpotTermination(
        termination_id=termination.termination_id,
        node_id=termination.node_id,
        workload_id=workload.id,
        workload_kind=workload.kind,
        unit_ids=list(workload.unit_ids),
        reservation_id=record.reservation_id or "",
        reason=record.reason,
        requested_at=requested,
        terminate_at=deadline,
    )


def send_ids(termination: OpenTermination) -> tuple[str, str]:
    """The de-duplication id and message group of the termination's next send."""
    record = termination.termination
    dedup = deduplication_id(record.id, record.deliveries, record.deadline_changes)
    group = message_group(termination.workload.id, record.id, record.deadline_changes)
    return dedup, group


def send_committed(
    node: Node, terminations: Sequence[OpenTermination], send: BatchSender, now: datetime
) -> None:
    """Send the terminations a reclaim committed; what cannot be sent waits for the sweeper."""
    if not terminations:
        return
    messages = [message(termination, now) for termination in terminations]
    dedup, groups = {}, {}
    for termination in terminations:
        if termination.termination.deadline_changes:
            ids = send_ids(termination)
            dedup[termination.termination_id], groups[termination.termination_id] = ids
    if not node.queue_url:
        sent: set[str] = set()
    elif dedup:  # a moved deadline is a new message, under ids of its own
        sent = send(node.queue_url, messages, dedup, groups)
    else:
        sent = send(node.queue_url, messages)
    if unsent := len(terminations) - len(sent):
        logger.error(
            "terminations committed but not sent; the sweeper will deliver them",
            extra={"unsent": unsent, "nodeId": node.id},
        )
        metrics.add_metric(name="TerminationsUnqueued", unit=MetricUnit.Count, value=unsent)
