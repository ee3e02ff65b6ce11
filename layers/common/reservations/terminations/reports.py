"""Applying a node's termination report: the workload is terminated and its units free, or
(``failed``) the node is noted as alive and still trying."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from reservations.kernel.envelope import EventContext, StoredEvent
from reservations.kernel.observability import logger, metrics
from reservations.kernel.writes import WriteConflict
from reservations.nodes import (
    NodeSnapshot,
    PartitionStore,
    Workload,
    WorkloadState,
    termination_of,
)
from reservations.terminations.models import TerminationReport
from reservations.terminations.ports import TerminationStore
from reservations.terminations.rules import events as terminations_events
from reservations.terminations.rules.delivery import closed_by, gpus_held, let_go
from reservations.terminations.writes import LetGo, TerminationClose

_ATTEMPTS = 3


class ReportOutcome(StrEnum):
    """What a report did: closed its termination, found none open, or was a failure noted."""

    CLOSED = "closed"
    UNKNOWN = "unknown"
    FAILED = "failed"


class ReportConflict(Exception):
    """The node partition kept changing while the report was applied; apply it again."""


def apply_report(
    report: TerminationReport, now: datetime, store: PartitionStore, terminations: TerminationStore
) -> ReportOutcome:
    """``closed``, ``unknown`` (logged and dropped) or ``failed`` (recorded; the node will
    retry).

    Raises :class:`ReportConflict` when the node partition kept changing, so that the
    record is retried by the queue rather than lost.
    """
    context = {
        "terminationId": report.termination_id,
        "nodeId": report.node_id,
        "workloadId": report.workload_id,
        "outcome": report.outcome,
    }
    if report.outcome == "failed":
        return record_failure(report, now, terminations, context)
    for _ in range(_ATTEMPTS):
        try:
            result = close_termination(report, now, store)
        except WriteConflict:
            continue
        if result is ReportOutcome.UNKNOWN:
            _dropped(context)
        else:
            logger.info("termination confirmed; units free", extra=context)
            metrics.add_metric(name="TerminationsConfirmed", unit=MetricUnit.Count, value=1)
        return result
    raise ReportConflict(f"termination {report.termination_id} kept conflicting")


def record_failure(
    report: TerminationReport,
    now: datetime,
    terminations: TerminationStore,
    context: dict[str, Any],
) -> ReportOutcome:
    """``failed``: the termination stays open (the message is still on the node's queue and
    comes back), but the report is recorded, so that the sweeper counts only the deliveries
    after it towards giving up, and a stuck one is open again. ``unknown`` when no such
    termination is open: nothing is written, as for a late ``terminated``."""
    before = terminations.record_failed_report(report, now)
    if before is None:
        _dropped(context)
        return ReportOutcome.UNKNOWN
    logger.warning(
        "node could not stop the workload yet",
        extra={
            **context,
            "detail": report.detail,
            "deliveries": termination_of(before).deliveries,
            "failedReports": termination_of(before).failed_reports + 1,
        },
    )
    metrics.add_metric(name="TerminationFailuresReported", unit=MetricUnit.Count, value=1)
    if termination_of(before).stuck_at is not None:
        logger.warning("stuck termination answered by its node: open again", extra=context)
        metrics.add_metric(name="TerminationsReopened", unit=MetricUnit.Count, value=1)
    return ReportOutcome.FAILED


def _dropped(context: dict[str, Any]) -> None:
    logger.warning("report for no open termination: dropped", extra=context)
    metrics.add_metric(name="TerminationReportsDropped", unit=MetricUnit.Count, value=1)


def close_termination(
    report: TerminationReport, now: datetime, store: PartitionStore
) -> ReportOutcome:
    """``closed``: the workload is terminated now, its units free. ``unknown``: no such
    termination is open (duplicate, late or foreign report); nothing changes."""
    snapshot = store.load_node(report.node_id)
    if snapshot is None:
        return ReportOutcome.UNKNOWN
    workload = closed_by(snapshot.workloads, report.workload_id, report.termination_id)
    if workload is None:
        return ReportOutcome.UNKNOWN
    released = let_go(workload, snapshot)
    gpus = gpus_held(workload, snapshot.units)
    store.commit(
        TerminationClose(
            node_id=report.node_id,
            workload=workload,
            termination_id=report.termination_id,
            outcome=report.outcome,
            freed_units=released.freed,
            at=now,
            handed=released.handed,
            waiters=released.waiters,
            gpus=gpus,
            events=(
                terminated_event(snapshot, workload, report, now, gpus),
                *started_events(
                    EventContext(
                        report.node_id, snapshot.node.owner_org_id, report.termination_id, now
                    ),
                    released,
                ),
            ),
        )
    )
    return ReportOutcome.CLOSED


def started_events(context: EventContext, released: LetGo) -> tuple[StoredEvent, ...]:
    """``workload.started`` for each waiting workload the end left with nothing to wait on
    (a report's, or the scheduler's end of a spot workload: ``context`` says whose)."""
    return tuple(
        terminations_events.workload_started(context, waiter)
        for waiter in released.waiters
        if waiter.state is WorkloadState.RUNNING
    )


def terminated_event(
    snapshot: NodeSnapshot,
    workload: Workload,
    report: TerminationReport,
    now: datetime,
    gpus: int,
) -> StoredEvent:
    """``workload.terminated``: the outcome and the node's report time (what billing stops
    at), and the workload's own use up to ``now`` on ``gpus`` GPUs, seen by the reclaiming
    reservation's managers too (kept on the workload by the reclaim). The service made it
    (no actor); its id is the termination's, which one report closes once."""
    context = EventContext(report.node_id, snapshot.node.owner_org_id, report.termination_id, now)
    managers = termination_of(workload).managing_org_ids
    return terminations_events.workload_terminated(
        context, workload, report.outcome, report.reported_at, managers, gpus=gpus
    )
