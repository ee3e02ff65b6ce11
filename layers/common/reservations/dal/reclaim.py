"""The reclaim's one atomic, conditional write, and marking terminations queued."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from reservations.config import settings
from reservations.dal import clients
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

# Cancellation reasons that mean "someone else wrote first": re-read and try again.
_RETRYABLE = frozenset({"ConditionalCheckFailed", "TransactionConflict"})


class WriteConflict(Exception):
    """The write lost to a concurrent writer; nothing was changed."""


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
                    "UpdateExpression": update + " REMOVE queuedAt",
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


def commit(actions: list[dict[str, Any]], token: str) -> None:
    """Run the transaction; :class:`WriteConflict` when a condition or a conflict cancels it.

    ``token`` (the reclaim id) makes the SDK's own retry of a request whose answer was lost
    idempotent: without it, a retry after a commit would fail its version checks and look
    like a lost race.
    """
    try:
        clients.dynamodb().transact_write_items(TransactItems=actions, ClientRequestToken=token)
    except ClientError as error:
        if error.response["Error"]["Code"] != "TransactionCanceledException":
            raise
        reasons = {
            reason.get("Code", "None") for reason in error.response.get("CancellationReasons", [])
        } - {"None"}
        if reasons and reasons <= _RETRYABLE:
            raise WriteConflict(", ".join(sorted(reasons))) from error
        if not reasons and "TransactionConflict" in str(error):
            raise WriteConflict("TransactionConflict") from error
        raise


def mark_queued(node_id: str, sent: Sequence[Termination], now: datetime) -> None:
    """Record that these terminations' messages went out (one request for up to 100).

    Conditioned on the termination id, so a report that already closed the termination is
    left alone; should that cancel the batch, each is marked on its own.
    """
    if not sent:
        return
    table = settings().table_name
    updates = [
        {
            "Update": {
                "TableName": table,
                "Key": _key(node_id, WORKLOAD_PREFIX + termination.workload_id),
                "UpdateExpression": "SET queuedAt = :now",
                "ConditionExpression": "terminationId = :tid AND #state = :terminating",
                "ExpressionAttributeNames": {"#state": "state"},
                "ExpressionAttributeValues": to_attributes(
                    {
                        ":now": format_time(now),
                        ":tid": termination.termination_id,
                        ":terminating": "terminating",
                    }
                ),
            }
        }
        for termination in sent
    ]
    client = clients.dynamodb()
    for start in range(0, len(updates), 100):
        batch = updates[start : start + 100]
        try:
            client.transact_write_items(TransactItems=batch)
        except ClientError as error:
            if error.response["Error"]["Code"] != "TransactionCanceledException":
                raise
            for update in batch:
                try:
                    client.update_item(**update["Update"])
                except client.exceptions.ConditionalCheckFailedException:
                    continue
