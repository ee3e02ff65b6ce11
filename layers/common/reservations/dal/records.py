"""What a write leaves outside the node's partition: the audit record every write puts in the
same transaction (:func:`written_with`), and the history of a workload that left the node.

Audit records live in partitions of their own (``dal.keys``): who did what, why, and what it
changed, kept as long as the table keeps them. History items expire by the table's TTL after
``HISTORY_DAYS``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import assert_never

from reservations.dal.keys import (
    Item,
    audit_key,
    audit_pk,
    history_key,
    node_audit_pk,
    workload_audit_pk,
)
from reservations.models.domain import Workload
from reservations.models.times import format_time
from reservations.models.writes import (
    NodePut,
    PartitionWrite,
    PlacementWrite,
    ReaffirmWrite,
    ReclaimWrite,
    ReservationChange,
    ReservationCreate,
    TerminationClose,
    WorkloadEnd,
)

HISTORY_DAYS = 90


def written_with(write: PartitionWrite) -> list[Item]:
    """The items every write puts beside its own changes, new in the table, in the same
    transaction: its audit record. (A report's close has none: its history item says it.)"""
    match write:
        case ReclaimWrite():
            return [reclaim_audit_item(write)]
        case ReservationChange():
            return [change_audit_item(write)]
        case ReservationCreate():
            return [create_audit_item(write)]
        case PlacementWrite():
            return [placement_audit_item(write)]
        case WorkloadEnd():
            return [workload_end_audit_item(write)]
        case NodePut():
            return [node_audit_item(write)]
        case ReaffirmWrite():
            return [reaffirm_audit_item(write)]
        case TerminationClose():
            return []
        case _:
            assert_never(write)


def _optional_time(moment: datetime | None) -> str | None:
    return format_time(moment) if moment is not None else None


def _who(write: ReservationChange | ReservationCreate | PlacementWrite | WorkloadEnd) -> Item:
    return {"callerOrgId": write.caller_org_id, "callerKeyId": write.caller_key_id}


def reclaim_audit_item(write: ReclaimWrite) -> Item:
    """The reclaim's audit record, in the reservation's audit partition."""
    stamp = format_time(write.at)
    audit = write.audit
    return {
        **audit_key(audit_pk(write.node_id, write.reservation.id), stamp, write.write_id),
        "action": "reclaim",
        "reclaimId": write.write_id,
        "nodeId": write.node_id,
        "reservationId": write.reservation.id,
        "callerOrgId": audit.caller_org_id,
        "callerKeyId": audit.caller_key_id,
        "reason": write.reason,
        "unitIds": list(audit.unit_ids),
        "releasedBefore": list(audit.released_before),
        "releasedAfter": list(
            audit.released_before if write.released_after is None else write.released_after
        ),
        "terminated": list(audit.terminated),
        "terminationIds": sorted(t.termination_id for t in write.terminations),
        "skipped": list(audit.skipped),
        "at": stamp,
    }


def create_audit_item(write: ReservationCreate) -> Item:
    """Who made the reservation, and its terms, in the reservation's audit partition."""
    reservation = write.reservation
    stamp = format_time(reservation.created_at)
    return {
        **audit_key(audit_pk(reservation.node_id, reservation.id), stamp, "create"),
        "action": "create",
        "nodeId": reservation.node_id,
        "reservationId": reservation.id,
        **_who(write),
        "reason": reservation.reason,
        "status": reservation.status.value,
        "unitIds": list(reservation.reserved_unit_ids),
        "allowedOrgIds": list(reservation.allowed_org_ids),
        "managingOrgIds": list(reservation.managing_org_ids),
        "startsAt": format_time(reservation.starts_at),
        "endsAt": _optional_time(reservation.ends_at),
        "contractRef": reservation.contract_ref,
        "topologyGen": reservation.topology_gen,
        "at": stamp,
    }


def change_audit_item(change: ReservationChange) -> Item:
    """A release's or a cancel's audit record, in the reservation's audit partition."""
    stamp = format_time(change.at)
    return {
        **audit_key(audit_pk(change.node_id, change.reservation.id), stamp, change.write_id),
        "action": change.action,
        "changeId": change.write_id,
        "nodeId": change.node_id,
        "reservationId": change.reservation.id,
        **_who(change),
        "reason": change.reason,
        "unitIds": list(change.unit_ids),
        "releasedBefore": list(change.released_before),
        "releasedAfter": list(
            change.released_before if change.released_after is None else change.released_after
        ),
        "statusBefore": change.status_before.value,
        "statusAfter": (change.status_after or change.status_before).value,
        "at": stamp,
    }


def placement_audit_item(write: PlacementWrite) -> Item:
    """Who placed which workload where: the placement's audit record."""
    workload = write.workload
    stamp = format_time(write.at)
    return {
        **audit_key(workload_audit_pk(write.node.id), stamp, write.write_id),
        "action": "place",
        "nodeId": write.node.id,
        "workloadId": workload.id,
        "kind": workload.kind.value,
        "tier": workload.tier.value,
        "orgId": workload.org_id,
        "unitIds": list(workload.unit_ids),
        "reservationIds": sorted(r.id for r in write.reservations),
        **_who(write),
        "at": stamp,
    }


def workload_end_audit_item(end: WorkloadEnd) -> Item:
    """Who ended which workload, and the units that became free."""
    workload = end.workload
    stamp = format_time(end.at)
    return {
        **audit_key(workload_audit_pk(end.node_id), stamp, end.write_id),
        "action": "end",
        "nodeId": end.node_id,
        "workloadId": workload.id,
        "state": workload.state.value,
        "terminationId": workload.termination_id,
        "unitIds": list(workload.unit_ids),
        "freedUnitIds": sorted(u.id for u in end.freed_units),
        **_who(end),
        "at": stamp,
    }


def node_audit_item(write: NodePut) -> Item:
    """A node's registration or update: who, which units it put, removed and changed."""
    stamp = format_time(write.at)
    return {
        **audit_key(node_audit_pk(write.node.id), stamp, write.write_id),
        "action": "register-node" if write.node_read is None else "update-node",
        "nodeId": write.node.id,
        "callerOrgId": write.caller_org_id,
        "callerKeyId": write.caller_key_id,
        "ownerOrgId": write.node.owner_org_id,
        "topologyGen": write.node.topology_gen,
        "unitsPut": sorted(put.unit.id for put in write.units),
        "unitsRemoved": sorted(unit.id for unit in write.removed),
        "unitsChanged": list(write.changed_unit_ids),
        # How many reservations the update puts under review, as it read them (their
        # items are not written: the review is derived from the node's generations).
        "reservationsReviewed": write.reviewed,
        "at": stamp,
    }


def reaffirm_audit_item(write: ReaffirmWrite) -> Item:
    """A reservation out of review: who, why, and the status and generation it took."""
    stamp = format_time(write.at)
    return {
        **audit_key(audit_pk(write.node_id, write.reservation.id), stamp, write.write_id),
        "action": "reaffirm",
        "nodeId": write.node_id,
        "reservationId": write.reservation.id,
        "callerOrgId": write.caller_org_id,
        "callerKeyId": write.caller_key_id,
        "reason": write.reason,
        "status": write.status.value,
        "topologyGen": write.topology_gen,
        "at": stamp,
    }


def _history(node_id: str, workload: Workload, at: datetime, ended_by: str) -> Item:
    """What every history item says: the workload that left, and when it expires."""
    return {
        **history_key(node_id, format_time(at), workload.id, ended_by),
        "workloadId": workload.id,
        "kind": workload.kind.value,
        "tier": workload.tier.value,
        "orgId": workload.org_id,
        "unitIds": list(workload.unit_ids),
        "reservationId": workload.termination_reservation_id,
        "requestedAt": _optional_time(workload.termination_requested_at),
        "expiresAtEpoch": int((at + timedelta(days=HISTORY_DAYS)).timestamp()),
    }


def history_item(closing: TerminationClose) -> Item:
    """A closed termination's workload, out of the hot partition, kept HISTORY_DAYS."""
    return {
        **_history(closing.node_id, closing.workload, closing.at, closing.termination_id),
        "terminationId": closing.termination_id,
        "outcome": closing.outcome,
        "terminatedAt": format_time(closing.at),
    }


def ended_workload_item(end: WorkloadEnd) -> Item:
    """A workload that stopped on its own, out of the hot partition like a closed
    termination (outcome ``ended``), kept HISTORY_DAYS."""
    workload = end.workload
    ended_by = workload.termination_id or end.write_id
    return {
        **_history(end.node_id, workload, end.at, ended_by),
        "terminationId": workload.termination_id,
        "outcome": "ended",
        "createdAt": _optional_time(workload.created_at),
        "endedAt": format_time(end.at),
    }
