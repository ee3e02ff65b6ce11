"""What a write leaves outside the node's partition: the events every write puts in the
same transaction (in the node's feed, ``nodes.table.keys``: who did what, why, and what it
changed, kept ``HistoryRetentionDays``), and the history of a workload that left the node
(expiring by the table's TTL after ``HISTORY_DAYS``).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from reservations.kernel.aws import clients
from reservations.kernel.aws.actions import Action
from reservations.kernel.aws.codec import Item
from reservations.kernel.aws.event_items import event_put, rewrite_late
from reservations.kernel.envelope import StoredEvent
from reservations.kernel.settings import settings
from reservations.kernel.times import format_moment, format_time
from reservations.nodes.models.partition import Workload
from reservations.nodes.models.writes import PartitionWrite
from reservations.nodes.table.keys import history_key, node_events_pk

HISTORY_DAYS = 90


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


def workload_history_item(node_id: str, workload: Workload, at: datetime, ended_by: str) -> Item:
    """What every history item of a workload that left the node says (a closed termination's,
    ``terminations.table.store``; an end's, ``workloads.table``): the workload, and when it
    expires."""
    termination = workload.termination
    return {
        **history_key(node_id, format_time(at), workload.id, ended_by),
        "workloadId": workload.id,
        "kind": workload.kind.value,
        "tier": workload.tier.value,
        "orgId": workload.org_id,
        "unitIds": list(workload.unit_ids),
        "reservationId": termination.reservation_id if termination else None,
        "requestedAt": _moment(termination.requested_at if termination else None),
        "terminateAt": _moment(termination.terminate_at if termination else None),
        "expiresAtEpoch": int((at + timedelta(days=HISTORY_DAYS)).timestamp()),
    }


def put_event(stored: StoredEvent) -> None:
    """One event on its own (it is normally written by its change's transaction)."""
    partition = node_events_pk(stored.event.node_id)
    action = event_put(stored, partition, settings().history_retention_days)
    clients.dynamodb().put_item(**action["Put"])
    rewrite_late([action])
