"""What a write leaves outside the node's partition: the audit record every write puts in the
same transaction, and the history of a workload that left the node.

Audit records live in partitions of their own (``dal.keys``): who did what, why, and what it
changed, kept as long as the table keeps them. History items expire by the table's TTL after
``HISTORY_DAYS``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Protocol

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
    PlacementWrite,
    ReaffirmWrite,
    ReclaimWrite,
    ReservationChange,
    ReservationCreate,
    TerminationClose,
    WorkloadEnd,
)

HISTORY_DAYS = 90


def _optional_time(moment: datetime | None) -> str | None:
    return format_time(moment) if moment is not None else None


class _Written(Protocol):
    """Every write names who asked: the caller's org and key id."""

    @property
    def caller_org_id(self) -> str: ...

    @property
    def caller_key_id(self) -> str: ...


def _audit(partition: str, at: datetime, name: str, write: _Written, **said: object) -> Item:
    """An audit record: in its partition at the write's time, who asked, what it says."""
    stamp = format_time(at)
    return {
        **audit_key(partition, stamp, name),
        **said,
        "callerOrgId": write.caller_org_id,
        "callerKeyId": write.caller_key_id,
        "at": stamp,
    }


def reclaim_audit_item(write: ReclaimWrite) -> Item:
    """The reclaim's audit record, in the reservation's audit partition."""
    audit, reservation_id = write.audit, write.reservation.id
    released_after = write.released_after
    return _audit(
        audit_pk(write.node_id, reservation_id),
        write.at,
        write.write_id,
        write,
        action="reclaim",
        reclaimId=write.write_id,
        nodeId=write.node_id,
        reservationId=reservation_id,
        reason=write.reason,
        unitIds=list(audit.unit_ids),
        releasedBefore=list(audit.released_before),
        releasedAfter=list(audit.released_before if released_after is None else released_after),
        terminated=list(audit.terminated),
        terminationIds=sorted(t.termination_id for t in write.terminations),
        skipped=list(audit.skipped),
    )


def create_audit_item(write: ReservationCreate) -> Item:
    """Who made the reservation, and its terms, in the reservation's audit partition."""
    made = write.reservation
    return _audit(
        audit_pk(made.node_id, made.id),
        made.created_at,
        "create",
        write,
        action="create",
        nodeId=made.node_id,
        reservationId=made.id,
        reason=made.reason,
        status=made.status.value,
        unitIds=list(made.reserved_unit_ids),
        allowedOrgIds=list(made.allowed_org_ids),
        managingOrgIds=list(made.managing_org_ids),
        startsAt=format_time(made.starts_at),
        endsAt=_optional_time(made.ends_at),
        contractRef=made.contract_ref,
        topologyGen=made.topology_gen,
    )


def change_audit_item(change: ReservationChange) -> Item:
    """A release's or a cancel's audit record, in the reservation's audit partition."""
    before, after = change.released_before, change.released_after
    return _audit(
        audit_pk(change.node_id, change.reservation.id),
        change.at,
        change.write_id,
        change,
        action=change.action,
        changeId=change.write_id,
        nodeId=change.node_id,
        reservationId=change.reservation.id,
        reason=change.reason,
        unitIds=list(change.unit_ids),
        releasedBefore=list(before),
        releasedAfter=list(before if after is None else after),
        statusBefore=change.status_before.value,
        statusAfter=(change.status_after or change.status_before).value,
    )


def placement_audit_item(write: PlacementWrite) -> Item:
    """Who placed which workload where: the placement's audit record."""
    workload = write.workload
    return _audit(
        workload_audit_pk(write.node.id),
        write.at,
        write.write_id,
        write,
        action="place",
        nodeId=write.node.id,
        workloadId=workload.id,
        kind=workload.kind.value,
        tier=workload.tier.value,
        orgId=workload.org_id,
        unitIds=list(workload.unit_ids),
        reservationIds=sorted(r.id for r in write.reservations),
    )


def workload_end_audit_item(end: WorkloadEnd) -> Item:
    """Who ended which workload, and the units that became free."""
    workload = end.workload
    return _audit(
        workload_audit_pk(end.node_id),
        end.at,
        end.write_id,
        end,
        action="end",
        nodeId=end.node_id,
        workloadId=workload.id,
        state=workload.state.value,
        terminationId=workload.termination_id,
        unitIds=list(workload.unit_ids),
        freedUnitIds=sorted(u.id for u in end.freed_units),
    )


def node_audit_item(write: NodePut) -> Item:
    """A node's registration or update: who, which units it put, removed and changed, and
    how many reservations the update puts under review as it read them (their items are
    not written: the review is derived from the node's generations)."""
    node = write.node
    return _audit(
        node_audit_pk(node.id),
        write.at,
        write.write_id,
        write,
        action="register-node" if write.node_read is None else "update-node",
        nodeId=node.id,
        ownerOrgId=node.owner_org_id,
        topologyGen=node.topology_gen,
        unitsPut=sorted(put.unit.id for put in write.units),
        unitsRemoved=sorted(unit.id for unit in write.removed),
        unitsChanged=list(write.changed_unit_ids),
        reservationsReviewed=write.reviewed,
    )


def reaffirm_audit_item(write: ReaffirmWrite) -> Item:
    """A reservation out of review: who, why, and the status and generation it took."""
    return _audit(
        audit_pk(write.node_id, write.reservation.id),
        write.at,
        write.write_id,
        write,
        action="reaffirm",
        nodeId=write.node_id,
        reservationId=write.reservation.id,
        reason=write.reason,
        status=write.status.value,
        topologyGen=write.topology_gen,
    )


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
