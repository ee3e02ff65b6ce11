"""The outbox: a terminating workload is the message to send, on the reclaim's path and the
sweeper's alike, built here once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from aws_lambda_powertools.metrics import MetricUnit

from reservations.kernel.observability import logger, metrics
from reservations.nodes import (
    Node,
    OpenTermination,
    ReclaimWrite,
    Termination,
    Workload,
    WorkloadState,
)
from reservations.terminations.models import SpotTermination
from reservations.terminations.ports import BatchSender


def message(termination: OpenTermination, now: datetime) -> SpotTermination:
    """The spot-termination message the outbox item stands for.

    ``requestedAt`` is to the whole second, the API's precision: the reclaim builds this
    from its clock, the sweeper from the table (which stores seconds), and the two sends of
    one termination must say the same.
    """
    workload, record = termination.workload, termination.termination
    requested = record.requested_at or now
    return SpotTermination(
        termination_id=termination.termination_id,
        node_id=termination.node_id,
        workload_id=workload.id,
        workload_kind=workload.kind,
        unit_ids=list(workload.unit_ids),
        reservation_id=record.reservation_id or "",
        reason=record.reason,
        requested_at=requested.replace(microsecond=0),
    )


def opened_by(write: ReclaimWrite, workloads: Sequence[Workload]) -> list[OpenTermination]:
    """The terminations ``write`` opened, as the outbox now holds them."""
    by_id = {w.id: w for w in workloads}
    return [
        OpenTermination(
            write.node_id,
            replace(
                by_id[t.workload.id],
                state=WorkloadState.TERMINATING,
                termination=Termination(
                    t.termination_id, write.reservation.id, write.reason, write.at
                ),
            ),
        )
        for t in write.terminations
    ]


def send_committed(
    node: Node, terminations: Sequence[OpenTermination], send: BatchSender, now: datetime
) -> None:
    """Send the terminations a reclaim committed; what cannot be sent waits for the sweeper."""
    if not terminations:
        return
    messages = [message(termination, now) for termination in terminations]
    sent = send(node.queue_url, messages) if node.queue_url else set()
    if unsent := len(terminations) - len(sent):
        logger.error(
            "terminations committed but not sent; the sweeper will deliver them",
            extra={"unsent": unsent, "nodeId": node.id},
        )
        metrics.add_metric(name="TerminationsUnqueued", unit=MetricUnit.Count, value=unsent)
