"""What a write leaves outside the node's partition: the events every write puts in the
same transaction (in the node's feed, ``nodes.table.keys``: who did what, why, and what it
changed, kept ``HistoryRetentionDays``), and the history of a workload that left the node
(kept as long, then gone: readers treat it so from that moment, the table's TTL deletes it
some time after).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from reservations.kernel.aws import clients
from reservations.kernel.aws.actions import Action
from reservations.kernel.aws.codec import EXPIRES_AT_EPOCH, Item
from reservations.kernel.aws.event_items import event_put, rewrite_late
from reservations.kernel.envelope import StoredEvent
from reservations.kernel.settings import settings
from reservations.kernel.times import format_event_time, format_moment, format_time, parse_time
from reservations.nodes.models.partition import (
    Tier,
    Workload,
    WorkloadKind,
    WorkloadState,
    WorkloadUse,
)
from reservations.nodes.models.reads import EndedWorkload
from reservations.nodes.models.writes import PartitionWrite
from reservations.nodes.table.keys import history_key, node_events_pk


def _moment(moment: datetime | None) -> str | None:
    return format_moment(moment) if moment is not None else None


def written_with(write: PartitionWrite) -> list[Action]:
    """What every write puts beside its own changes, in its own transaction: its events
    (each only where it is not yet: a rebuilt write carries the same ids). They are the
    write's record: who did what, why, and what it changed."""
    retention = settings().history_retention_days
    return [
        event_put(stored, node_events_pk(stored.event.node_id), retention)
        for stored in write.events
    ]


def workload_history_item(
    node_id: str, workload: Workload, at: datetime, ended_by: str, gpus: int
) -> Item:
    """What every history item of a workload that left the node at ``at`` says (a closed
    termination's, ``terminations.table.store``; an end's, ``workloads.table``): the
    workload as GET answers an ended one, with its own use to ``at`` on ``gpus`` GPUs, and
    when it expires (``HistoryRetentionDays`` after it left)."""
    termination = workload.termination
    use = workload.use_until(at, gpus)
    retention = timedelta(days=settings().history_retention_days)
    return {
        **history_key(node_id, workload.id, format_event_time(at), ended_by),
        "workloadId": workload.id,
        "kind": workload.kind.value,
        "tier": workload.tier.value,
        "orgId": workload.org_id,
        "unitIds": list(workload.unit_ids),
        "reservationId": termination.reservation_id if termination else None,
        "requestedAt": _moment(termination.requested_at if termination else None),
        "terminateAt": _moment(termination.terminate_at if termination else None),
        "createdAt": format_time(workload.created_at) if workload.created_at else None,
        "promisedNoticeSeconds": workload.promised_notice_seconds or None,
        "promisedMinRunSeconds": workload.promised_min_run_seconds or None,
        "usedFrom": format_event_time(use.used_from),
        "usedTo": format_event_time(use.used_to),
        "gpuMs": use.gpu_ms,
        EXPIRES_AT_EPOCH: int((at + retention).timestamp()),
    }


def ended_workload_from_item(item: Item) -> EndedWorkload:
    """A workload's history item as GET reads it back (:func:`workload_history_item`)."""
    workload = Workload(
        id=item["workloadId"],
        kind=WorkloadKind(item["kind"]),
        tier=Tier(item["tier"]),
        org_id=item["orgId"],
        unit_ids=tuple(str(unit) for unit in item.get("unitIds") or ()),
        state=WorkloadState.TERMINATED,
        created_at=_parse(item.get("createdAt")),
        promised_notice_seconds=int(item.get("promisedNoticeSeconds") or 0),
        promised_min_run_seconds=int(item.get("promisedMinRunSeconds") or 0),
    )
    use = WorkloadUse(parse_time(item["usedFrom"]), parse_time(item["usedTo"]), int(item["gpuMs"]))
    until = datetime.fromtimestamp(int(item[EXPIRES_AT_EPOCH]), UTC)
    return EndedWorkload(workload, use, until)


def _parse(text: Any) -> datetime | None:
    return parse_time(text) if text else None


def put_event(stored: StoredEvent) -> None:
    """One event on its own (it is normally written by its change's transaction)."""
    partition = node_events_pk(stored.event.node_id)
    action = event_put(stored, partition, settings().history_retention_days)
    clients.dynamodb().put_item(**action["Put"])
    rewrite_late([action])
