"""The reclaim's one atomic, conditional write."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from reservations.config import settings
from reservations.dal.items import (
    OPEN,
    OPEN_TERMINATION,
    RESERVATION_PREFIX,
    UNIT_PREFIX,
    WORKLOAD_PREFIX,
    audit_pk,
    format_time,
    node_pk,
    to_attributes,
)
from reservations.models.domain import Caller
from reservations.rules.reclaim_plan import ReclaimPlan


@dataclass(frozen=True)
class Termination:
    termination_id: str
    workload_id: str


def _key(node_id: str, sort_key: str) -> dict[str, Any]:
    return {"PK": {"S": node_pk(node_id)}, "SK": {"S": sort_key}}


def _version_check(node_id: str, sort_key: str, version: int) -> dict[str, Any]:
    return {
        "ConditionCheck": {
            "TableName": settings().table_name,
            "Key": _key(node_id, sort_key),
            "ConditionExpression": "version = :v",
            "ExpressionAttributeValues": {":v": {"N": str(version)}},
        }
    }


def reclaim_transaction(
    plan: ReclaimPlan,
    terminations: Sequence[Termination],
    caller: Caller,
    reason: str | None,
    reclaim_id: str,
    now: datetime,
) -> list[dict[str, Any]]:
    """The TransactWriteItems for ``plan``: conditioned on the version of every item read."""
    table = settings().table_name
    reservation = plan.reservation
    node_id = reservation.node_id
    stamp = format_time(now)
    actions: list[dict[str, Any]] = []

    if plan.releases_change:
        actions.append(
            {
                "Update": {
                    "TableName": table,
                    "Key": _key(node_id, RESERVATION_PREFIX + reservation.id),
                    "UpdateExpression": "SET releasedUnitIds = :released, updatedAt = :now, "
                    "version = version + :one",
                    "ConditionExpression": "version = :v",
                    "ExpressionAttributeValues": to_attributes(
                        {
                            ":released": list(plan.released_after),
                            ":now": stamp,
                            ":one": 1,
                            ":v": reservation.version,
                        }
                    ),
                }
            }
        )
    else:
        actions.append(
            _version_check(node_id, RESERVATION_PREFIX + reservation.id, reservation.version)
        )

    for unit in plan.units:
        actions.append(_version_check(node_id, UNIT_PREFIX + unit.id, unit.version))

    by_workload = {t.workload_id: t.termination_id for t in terminations}
    for workload in plan.to_terminate:
        values = {
            ":terminating": "terminating",
            ":tid": by_workload[workload.id],
            ":res": reservation.id,
            ":now": stamp,
            ":open": OPEN,
            ":one": 1,
            ":v": workload.version,
        }
        update = (
            f"SET #state = :terminating, terminationId = :tid, terminationReservationId = :res, "
            f"terminationRequestedAt = :now, {OPEN_TERMINATION} = :open, "
            f"version = version + :one"
        )
        if reason is not None:
            update += ", terminationReason = :reason"
            values[":reason"] = reason
        actions.append(
            {
                "Update": {
                    "TableName": table,
                    "Key": _key(node_id, WORKLOAD_PREFIX + workload.id),
                    "UpdateExpression": update,
                    "ConditionExpression": "version = :v",
                    "ExpressionAttributeNames": {"#state": "state"},
                    "ExpressionAttributeValues": to_attributes(values),
                }
            }
        )
    for workload in (*plan.already_terminating, *plan.skipped):
        actions.append(_version_check(node_id, WORKLOAD_PREFIX + workload.id, workload.version))

    audit = {
        "PK": audit_pk(node_id, reservation.id),
        "SK": f"{stamp}#{reclaim_id}",
        "action": "reclaim",
        "reclaimId": reclaim_id,
        "nodeId": node_id,
        "reservationId": reservation.id,
        "callerOrgId": caller.org_id,
        "callerKeyId": caller.key_id,
        "reason": reason,
        "unitIds": list(plan.unit_ids),
        "releasedBefore": list(reservation.released_unit_ids),
        "releasedAfter": list(plan.released_after),
        "terminated": plan.terminated_ids,
        "terminationIds": sorted(t.termination_id for t in terminations),
        "skipped": plan.skipped_ids,
        "at": stamp,
    }
    actions.append(
        {
            "Put": {
                "TableName": table,
                "Item": to_attributes(audit),
                "ConditionExpression": "attribute_not_exists(PK)",
            }
        }
    )
    return actions
