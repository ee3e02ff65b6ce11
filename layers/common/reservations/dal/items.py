"""The single-table layout: how each entity is keyed and encoded as a DynamoDB item.

One partition per node (``NODE#<id>``) holds the node, its units, its reservations and its
live workloads, so either endpoint reads all it decides from with one Query. After them, last
in the partition, the node's list access item (``~ACCESS``): its owner, the orgs its
reservations name and a copy of its units' generations of last change, which a page of the
reservation list reads with the page whatever its cursor, and which the calls on the node's
present stop before. API keys live in their own
partitions (``APIKEY#<sha256>``). Every item in a node partition carries a ``version`` that
each writer bumps, so a conditional write can tell it saw the latest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from reservations.models.changes import ReservationChange
from reservations.models.domain import (
    ApiKey,
    ListAccess,
    Node,
    NodeSnapshot,
    Reservation,
    ReservationStatus,
    Tier,
    Unit,
    UnitGenerations,
    Workload,
    WorkloadKind,
    WorkloadState,
)
from reservations.models.idempotency import AnswerRecord, Outcome, StoredResponse

# Re-exported: the layout is where callers have always found the stored time format.
from reservations.models.times import format_time as format_time
from reservations.models.times import parse_time as parse_time
from reservations.models.writes import (
    PlacementWrite,
    ReclaimWrite,
    ReservationCreate,
    TerminationClose,
    WorkloadEnd,
)

NODE_PREFIX = "NODE#"
NODE_SK = "#NODE"
UNIT_PREFIX = "UNIT#"
RESERVATION_PREFIX = "RES#"
WORKLOAD_PREFIX = "WL#"
# Sorts after every other sort key of a node partition ("~" is above every prefix's letter).
ACCESS_SK = "~ACCESS"
APIKEY_PREFIX = "APIKEY#"
APIKEY_SK = "APIKEY"
AUDIT_PREFIX = "AUDIT#"
# Closed terminations, kept HISTORY_DAYS outside the node partition.
HISTORY_PREFIX = "WLHIST#"
HISTORY_DAYS = 90
# A workload that is ``terminating`` carries ``openTermination`` ("open", or "stuck" once
# delivered several times without a report), which puts it in the sparse OpenTerminations
# index (sort key terminationRequestedAt) that the sweeper and the operator command read.
OPEN_TERMINATION = "openTermination"
# The node item's map of its units, each to the generation it last changed at (the units
# the node has: a unit item it does not list is left over, and no call sees it), and its
# count of placements (each adds one; a node update conditions on it).
UNITS_CHANGED_AT = "unitsChangedAtGen"
PLACEMENTS = "placements"
OPEN = "open"
STUCK = "stuck"

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()

Item = dict[str, Any]


def node_pk(node_id: str) -> str:
    return NODE_PREFIX + node_id


def node_id_of(partition_key: str) -> str:
    """The node id a node partition's key names."""
    return partition_key.removeprefix(NODE_PREFIX)


def node_key(node_id: str) -> Item:
    return {"PK": node_pk(node_id), "SK": NODE_SK}


def unit_key(node_id: str, unit_id: str) -> Item:
    return {"PK": node_pk(node_id), "SK": UNIT_PREFIX + unit_id}


def reservation_key(node_id: str, reservation_id: str) -> Item:
    return {"PK": node_pk(node_id), "SK": RESERVATION_PREFIX + reservation_id}


def workload_key(node_id: str, workload_id: str) -> Item:
    return {"PK": node_pk(node_id), "SK": WORKLOAD_PREFIX + workload_id}


def access_key(node_id: str) -> Item:
    return {"PK": node_pk(node_id), "SK": ACCESS_SK}


def audit_pk(node_id: str, reservation_id: str) -> str:
    """Audit records live outside the node partition, so its Query stays small."""
    return f"{AUDIT_PREFIX}{node_id}#{reservation_id}"


def apikey_pk(key_hash: str) -> str:
    return APIKEY_PREFIX + key_hash


def to_attributes(item: Mapping[str, Any]) -> dict[str, Any]:
    """A plain item (None values dropped) in DynamoDB's attribute-value form."""
    return {name: _serializer.serialize(value) for name, value in item.items() if value is not None}


def from_attributes(attributes: Mapping[str, Any]) -> Item:
    return {name: _deserializer.deserialize(value) for name, value in attributes.items()}


def _optional_time(moment: datetime | None) -> str | None:
    return format_time(moment) if moment is not None else None


def node_item(node: Node) -> Item:
    return {
        "PK": node_pk(node.id),
        "SK": NODE_SK,
        "id": node.id,
        "ownerOrgId": node.owner_org_id,
        "topologyGen": node.topology_gen,
        "queueUrl": node.queue_url,
        "createdAt": _optional_time(node.created_at),
        "updatedAt": _optional_time(node.updated_at),
        UNITS_CHANGED_AT: _unit_generations(node),
        PLACEMENTS: node.placements or None,
        "version": node.version,
    }


def _unit_generations(node: UnitGenerations) -> dict[str, int] | None:
    changed_at = node.unit_changed_at
    return None if changed_at is None else dict(sorted(changed_at.items()))


def unit_item(node_id: str, unit: Unit) -> Item:
    return {
        "PK": node_pk(node_id),
        "SK": UNIT_PREFIX + unit.id,
        "id": unit.id,
        "allocClass": unit.alloc_class,
        "gpuModelId": unit.gpu_model_id,
        "gpuModelName": unit.gpu_model_name,
        "sellableGpus": unit.sellable_gpus,
        "sellable": unit.sellable,
        "notSellableReason": unit.not_sellable_reason,
        "claimedBy": unit.claimed_by,
        "version": unit.version,
    }


def reservation_item(reservation: Reservation) -> Item:
    return {
        "PK": node_pk(reservation.node_id),
        "SK": RESERVATION_PREFIX + reservation.id,
        "id": reservation.id,
        "nodeId": reservation.node_id,
        "status": reservation.status.value,
        "startsAt": format_time(reservation.starts_at),
        "endsAt": _optional_time(reservation.ends_at),
        "allowedOrgIds": list(reservation.allowed_org_ids),
        "managingOrgIds": list(reservation.managing_org_ids),
        "reservedUnitIds": list(reservation.reserved_unit_ids),
        "releasedUnitIds": list(reservation.released_unit_ids),
        "contractRef": reservation.contract_ref,
        "reason": reservation.reason,
        "topologyGen": reservation.topology_gen,
        "createdAt": format_time(reservation.created_at),
        "updatedAt": format_time(reservation.updated_at),
        "version": reservation.version,
    }


def access_item(node_id: str, access: ListAccess) -> Item:
    """The node's list access (a string set cannot be empty: no named org, no attribute),
    with the node's unit generations as its node item keeps them."""
    return {
        **access_key(node_id),
        "ownerOrgId": access.owner_org_id,
        "namedOrgIds": set(access.named_org_ids) or None,
        UNITS_CHANGED_AT: _unit_generations(access),
    }


def access_from_item(item: Item) -> ListAccess:
    return ListAccess(
        owner_org_id=item["ownerOrgId"],
        named_org_ids=frozenset(_strings(item.get("namedOrgIds"))),
        unit_changed_at=_generations(item.get(UNITS_CHANGED_AT)),
    )


def workload_item(node_id: str, workload: Workload) -> Item:
    return {
        "PK": node_pk(node_id),
        "SK": WORKLOAD_PREFIX + workload.id,
        "id": workload.id,
        "kind": workload.kind.value,
        "tier": workload.tier.value,
        "orgId": workload.org_id,
        "unitIds": list(workload.unit_ids),
        "state": workload.state.value,
        "terminationId": workload.termination_id,
        "terminationReservationId": workload.termination_reservation_id,
        "terminationReason": workload.termination_reason,
        "terminationRequestedAt": _optional_time(workload.termination_requested_at),
        "deliveries": workload.termination_deliveries or None,
        "lastDeliveredAt": _optional_time(workload.termination_last_delivered_at),
        "stuckAt": _optional_time(workload.termination_stuck_at),
        **_last_report(workload),
        OPEN_TERMINATION: _open_termination(workload),
        "createdAt": _optional_time(workload.created_at),
        "version": workload.version,
    }


def _last_report(workload: Workload) -> Item:
    """The node's last failed report, all three attributes or none: a report made before
    any delivery stores its count of 0, so the item still says a report came."""
    if workload.termination_last_reported_at is None:
        return {}
    return {
        "terminationReportedDeliveries": workload.termination_reported_deliveries,
        "terminationLastReportedAt": format_time(workload.termination_last_reported_at),
        "terminationFailedReports": workload.termination_failed_reports,
    }


def _open_termination(workload: Workload) -> str | None:
    if workload.state is not WorkloadState.TERMINATING:
        return None
    return STUCK if workload.termination_stuck_at is not None else OPEN


def apikey_item(key_hash: str, api_key: ApiKey) -> Item:
    return {
        "PK": apikey_pk(key_hash),
        "SK": APIKEY_SK,
        "keyId": api_key.key_id,
        "orgId": api_key.org_id,
        "permissions": sorted(api_key.permissions),
        "platformOperator": api_key.platform_operator,
        "revoked": api_key.revoked,
        "expiresAt": _optional_time(api_key.expires_at),
    }


def _parse_optional(text: str | None) -> datetime | None:
    return parse_time(text) if text else None


def _int(value: Any) -> int | None:
    return int(value) if value is not None else None


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value or ())


def api_key_from_item(item: Item) -> ApiKey:
    expires_at = item.get("expiresAt")
    return ApiKey(
        key_id=item["keyId"],
        org_id=item["orgId"],
        permissions=frozenset(_strings(item.get("permissions"))),
        platform_operator=bool(item.get("platformOperator", False)),
        revoked=bool(item.get("revoked", False)),
        expires_at=parse_time(expires_at) if expires_at else None,
    )


def _node(item: Item) -> Node:
    return Node(
        id=item["id"],
        owner_org_id=item["ownerOrgId"],
        topology_gen=_int(item.get("topologyGen")),
        queue_url=item.get("queueUrl"),
        version=int(item["version"]),
        created_at=_parse_optional(item.get("createdAt")),
        updated_at=_parse_optional(item.get("updatedAt")),
        unit_changed_at=_generations(item.get(UNITS_CHANGED_AT)),
        placements=int(item.get(PLACEMENTS, 0)),
    )


def _generations(value: Any) -> dict[str, int] | None:
    return None if value is None else {str(unit): int(gen) for unit, gen in value.items()}


def _unit(item: Item) -> Unit:
    return Unit(
        id=item["id"],
        alloc_class=item["allocClass"],
        gpu_model_id=item["gpuModelId"],
        gpu_model_name=item.get("gpuModelName"),
        sellable_gpus=int(item["sellableGpus"]),
        sellable=bool(item["sellable"]),
        not_sellable_reason=item.get("notSellableReason"),
        claimed_by=item.get("claimedBy"),
        version=int(item["version"]),
    )


def _reservation(item: Item) -> Reservation:
    ends_at = item.get("endsAt")
    return Reservation(
        id=item["id"],
        node_id=item["nodeId"],
        status=ReservationStatus(item["status"]),
        starts_at=parse_time(item["startsAt"]),
        ends_at=parse_time(ends_at) if ends_at else None,
        allowed_org_ids=_strings(item.get("allowedOrgIds")),
        managing_org_ids=_strings(item.get("managingOrgIds")),
        reserved_unit_ids=_strings(item.get("reservedUnitIds")),
        released_unit_ids=_strings(item.get("releasedUnitIds")),
        contract_ref=item.get("contractRef"),
        reason=item.get("reason"),
        topology_gen=_int(item.get("topologyGen")),
        created_at=parse_time(item["createdAt"]),
        updated_at=parse_time(item["updatedAt"]),
        version=int(item["version"]),
    )


def node_from_item(item: Item) -> Node:
    return _node(item)


def reservation_from_item(item: Item) -> Reservation:
    return _reservation(item)


def workload_from_item(item: Item) -> Workload:
    return Workload(
        id=item["id"],
        kind=WorkloadKind(item["kind"]),
        tier=Tier(item["tier"]),
        org_id=item["orgId"],
        unit_ids=_strings(item.get("unitIds")),
        state=WorkloadState(item["state"]),
        termination_id=item.get("terminationId"),
        termination_reservation_id=item.get("terminationReservationId"),
        termination_reason=item.get("terminationReason"),
        termination_requested_at=_parse_optional(item.get("terminationRequestedAt")),
        termination_deliveries=int(item.get("deliveries", 0)),
        termination_last_delivered_at=_parse_optional(item.get("lastDeliveredAt")),
        termination_stuck_at=_parse_optional(item.get("stuckAt")),
        termination_reported_deliveries=int(item.get("terminationReportedDeliveries", 0)),
        termination_last_reported_at=_parse_optional(item.get("terminationLastReportedAt")),
        termination_failed_reports=int(item.get("terminationFailedReports", 0)),
        version=int(item["version"]),
        created_at=_parse_optional(item.get("createdAt")),
    )


def snapshot_from_items(items: Iterable[Item]) -> NodeSnapshot | None:
    """Assemble a node's partition; None when the partition has no node item."""
    node: Node | None = None
    units: list[Unit] = []
    reservations: list[Reservation] = []
    workloads: list[Workload] = []
    for item in items:
        sort_key: str = item["SK"]
        if sort_key == NODE_SK:
            node = _node(item)
        elif sort_key.startswith(UNIT_PREFIX):
            units.append(_unit(item))
        elif sort_key.startswith(RESERVATION_PREFIX):
            reservations.append(_reservation(item))
        elif sort_key.startswith(WORKLOAD_PREFIX):
            workloads.append(workload_from_item(item))
    if node is None:
        return None
    listed = node.unit_changed_at
    return NodeSnapshot(
        node=node,
        units=tuple(u for u in units if listed is None or u.id in listed),
        reservations=tuple(reservations),
        workloads=tuple(workloads),
        unlisted_units=tuple(u for u in units if listed is not None and u.id not in listed),
    )


IDEMPOTENCY_PREFIX = "IDEMPOTENCY#"
IDEMPOTENCY_SK = "RESPONSE"


def idempotency_key(scope: str) -> Item:
    """Idempotency records live in their own partitions, outside every node's."""
    return {"PK": IDEMPOTENCY_PREFIX + scope, "SK": IDEMPOTENCY_SK}


def idempotency_item(answer: AnswerRecord) -> Item:
    return {
        **idempotency_key(answer.request.scope),
        "requestHash": answer.request.request_hash,
        "status": answer.outcome.status,
        "body": answer.outcome.body,
        # Only answers with headers of their own have it: older records read the same.
        "headers": dict(answer.outcome.headers) or None,
        "createdAt": format_time(answer.created_at),
        "expiresAt": format_time(answer.expires_at),
        # DynamoDB's TTL deletes it some time after this; readers check expiresAt themselves.
        "expiresAtEpoch": int(answer.expires_at.timestamp()),
    }


def stored_response_from_item(item: Item) -> StoredResponse:
    return StoredResponse(
        request_hash=item["requestHash"],
        outcome=Outcome(
            status=int(item["status"]),
            body=item["body"],
            headers=tuple(sorted((item.get("headers") or {}).items())),
        ),
        expires_at=parse_time(item["expiresAt"]),
    )


def audit_item(write: ReclaimWrite) -> Item:
    """The reclaim's audit record, in the reservation's audit partition."""
    stamp = format_time(write.at)
    audit = write.audit
    return {
        "PK": audit_pk(write.node_id, write.reservation.id),
        "SK": f"{stamp}#{write.reclaim_id}",
        "action": "reclaim",
        "reclaimId": write.reclaim_id,
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
        "PK": audit_pk(reservation.node_id, reservation.id),
        "SK": f"{stamp}#create",
        "action": "create",
        "nodeId": reservation.node_id,
        "reservationId": reservation.id,
        "callerOrgId": write.caller_org_id,
        "callerKeyId": write.caller_key_id,
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


def history_item(closing: TerminationClose) -> Item:
    """A closed termination's workload, out of the hot partition, kept HISTORY_DAYS."""
    workload = closing.workload
    return {
        "PK": HISTORY_PREFIX + closing.node_id,
        "SK": f"{format_time(closing.at)}#{workload.id}#{closing.termination_id}",
        "workloadId": workload.id,
        "kind": workload.kind.value,
        "tier": workload.tier.value,
        "orgId": workload.org_id,
        "unitIds": list(workload.unit_ids),
        "terminationId": closing.termination_id,
        "reservationId": workload.termination_reservation_id,
        "outcome": closing.outcome,
        "requestedAt": _optional_time(workload.termination_requested_at),
        "terminatedAt": format_time(closing.at),
        "expiresAtEpoch": int((closing.at + timedelta(days=HISTORY_DAYS)).timestamp()),
    }


def workload_audit_pk(node_id: str) -> str:
    """The audit partition of a node's placements and ends ("/" is in no id, so no
    reservation's audit partition can be this one)."""
    return f"{AUDIT_PREFIX}{node_id}/workloads"


def placement_audit_item(write: PlacementWrite) -> Item:
    """Who placed which workload where: the placement's audit record."""
    workload = write.workload
    stamp = format_time(write.at)
    return {
        "PK": workload_audit_pk(write.node.id),
        "SK": f"{stamp}#{write.write_id}",
        "action": "place",
        "nodeId": write.node.id,
        "workloadId": workload.id,
        "kind": workload.kind.value,
        "tier": workload.tier.value,
        "orgId": workload.org_id,
        "unitIds": list(workload.unit_ids),
        "reservationIds": sorted(r.id for r in write.reservations),
        "callerOrgId": write.caller_org_id,
        "callerKeyId": write.caller_key_id,
        "at": stamp,
    }


def workload_end_audit_item(end: WorkloadEnd) -> Item:
    """Who ended which workload, and the units that became free."""
    workload = end.workload
    stamp = format_time(end.at)
    return {
        "PK": workload_audit_pk(end.node_id),
        "SK": f"{stamp}#{end.write_id}",
        "action": "end",
        "nodeId": end.node_id,
        "workloadId": workload.id,
        "state": workload.state.value,
        "terminationId": workload.termination_id,
        "unitIds": list(workload.unit_ids),
        "freedUnitIds": sorted(u.id for u in end.freed_units),
        "callerOrgId": end.caller_org_id,
        "callerKeyId": end.caller_key_id,
        "at": stamp,
    }


def ended_workload_item(end: WorkloadEnd) -> Item:
    """A workload that stopped on its own, out of the hot partition like a closed
    termination (outcome ``ended``), kept HISTORY_DAYS."""
    workload = end.workload
    return {
        "PK": HISTORY_PREFIX + end.node_id,
        "SK": f"{format_time(end.at)}#{workload.id}#{workload.termination_id or end.write_id}",
        "workloadId": workload.id,
        "kind": workload.kind.value,
        "tier": workload.tier.value,
        "orgId": workload.org_id,
        "unitIds": list(workload.unit_ids),
        "terminationId": workload.termination_id,
        "reservationId": workload.termination_reservation_id,
        "outcome": "ended",
        "createdAt": _optional_time(workload.created_at),
        "requestedAt": _optional_time(workload.termination_requested_at),
        "endedAt": format_time(end.at),
        "expiresAtEpoch": int((end.at + timedelta(days=HISTORY_DAYS)).timestamp()),
    }


def change_audit_item(change: ReservationChange) -> Item:
    """A release's or a cancel's audit record, in the reservation's audit partition."""
    stamp = format_time(change.at)
    return {
        "PK": audit_pk(change.node_id, change.reservation.id),
        "SK": f"{stamp}#{change.change_id}",
        "action": change.action,
        "changeId": change.change_id,
        "nodeId": change.node_id,
        "reservationId": change.reservation.id,
        "callerOrgId": change.caller_org_id,
        "callerKeyId": change.caller_key_id,
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
