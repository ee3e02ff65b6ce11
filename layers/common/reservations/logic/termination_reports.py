"""Applying a node's termination report: the workload is terminated and its units free."""

from __future__ import annotations

from datetime import datetime

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from reservations.dal.terminations import ReportConflict, close_termination
from reservations.models.messages import TerminationReport

logger = Logger()
metrics = Metrics()

_ATTEMPTS = 3


def apply_report(report: TerminationReport, now: datetime) -> str:
    """``closed``, ``unknown`` (logged and dropped) or ``failed`` (the node will retry).

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
        # Nothing changes: the message stays on the node's queue and is tried again.
        logger.warning("node could not stop the workload yet", extra=context)
        metrics.add_metric(name="TerminationFailuresReported", unit=MetricUnit.Count, value=1)
        return "failed"
    for _ in range(_ATTEMPTS):
        try:
            result = close_termination(report, now)
        except ReportConflict:
            continue
        if result == "unknown":
            logger.warning("report for no open termination: dropped", extra=context)
            metrics.add_metric(name="TerminationReportsDropped", unit=MetricUnit.Count, value=1)
        else:
            logger.info("termination confirmed; units free", extra=context)
            metrics.add_metric(name="TerminationsConfirmed", unit=MetricUnit.Count, value=1)
        return result
    raise ReportConflict(f"termination {report.termination_id} kept conflicting")
