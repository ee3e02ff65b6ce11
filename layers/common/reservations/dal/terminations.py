"""Closing a termination (reported by the node), and the outbox of open ones."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from reservations.config import settings
from reservations.dal import clients
from reservations.dal.items import (
    NODE_SK,
    OPEN,
    OPEN_TERMINATION,
    STUCK,
    WORKLOAD_PREFIX,
    format_time,
    from_attributes,
    node_pk,
    to_attributes,
    workload_from_item,
)
from reservations.dal.store import load_node
from reservations.models.domain import Workload, WorkloadState
from reservations.models.messages import TerminationReport

OPEN_TERMINATIONS_INDEX = "OpenTerminations"
HISTORY_DAYS = 90


class ReportConflict(Exception):
    """The node partition changed while the report was applied; apply it again."""


def close_termination(report: TerminationReport, now: datetime) -> str:
    """Mark the workload terminated and free its units; what happened, in one word.

    ``closed``: done now. ``unknown``: no such termination is open (a duplicate or late
    report, or one for a termination this table never had); nothing is changed.
    The workload leaves the node partition for a history item (kept 90 days).
    """
    snapshot = load_node(report.node_id)
    if snapshot is None:
        return "unknown"
    workload = next((w for w in snapshot.workloads if w.id == report.workload_id), None)
    if (
        workload is None
        or workload.state is not WorkloadState.TERMINATING
        or workload.termination_id != report.termination_id
    ):
        return "unknown"
    table = settings().table_name
    key = {"PK": node_pk(report.node_id), "SK": WORKLOAD_PREFIX + workload.id}
    actions: list[dict[str, Any]] = [
        {
            "Delete": {
                "TableName": table,
                "Key": to_attributes(key),
                "ConditionExpression": "version = :v AND terminationId = :tid",
                "ExpressionAttributeValues": to_attributes(
                    {":v": workload.version, ":tid": report.termination_id}
                ),
            }
        },
        {"Put": {"TableName": table, "Item": to_attributes(_history(report, workload, now))}},
    ]
    for unit in snapshot.units:
        if unit.id in workload.unit_ids and unit.claimed_by == workload.claim:
            actions.append(
                {
                    "Update": {
                        "TableName": table,
                        "Key": to_attributes({"PK": key["PK"], "SK": f"UNIT#{unit.id}"}),
                        "UpdateExpression": "REMOVE claimedBy SET version = version + :one",
                        "ConditionExpression": "version = :v",
                        "ExpressionAttributeValues": to_attributes({":v": unit.version, ":one": 1}),
                    }
                }
            )
    try:
        clients.dynamodb().transact_write_items(TransactItems=actions)
    except ClientError as error:
        if error.response["Error"]["Code"] == "TransactionCanceledException":
            raise ReportConflict(str(error)) from error
        raise
    return "closed"


def _history(report: TerminationReport, workload: Workload, now: datetime) -> dict[str, Any]:
    return {
        "PK": f"WLHIST#{report.node_id}",
        "SK": f"{format_time(now)}#{workload.id}#{report.termination_id}",
        "workloadId": workload.id,
        "kind": workload.kind.value,
        "tier": workload.tier.value,
        "orgId": workload.org_id,
        "unitIds": list(workload.unit_ids),
        "terminationId": report.termination_id,
        "reservationId": workload.termination_reservation_id,
        "outcome": report.outcome,
        "requestedAt": format_time(workload.termination_requested_at)
        if workload.termination_requested_at
        else None,
        "terminatedAt": format_time(now),
        "expiresAtEpoch": int((now + timedelta(days=HISTORY_DAYS)).timestamp()),
    }


@dataclass(frozen=True)
class OpenTermination:
    """A terminating workload as the outbox holds it: the message and its delivery record."""

    node_id: str
    workload: Workload

    @property
    def termination_id(self) -> str:
        return self.workload.termination_id or ""


class TerminationStore:
    """The outbox side of open terminations: the sparse index, consistent re-reads, and the
    sweeper's delivery record on the workload item."""

    def __init__(self, dynamodb: Any = None, table: str | None = None) -> None:
        self._client = dynamodb
        self._table = table

    @property
    def client(self) -> Any:
        return self._client or clients.dynamodb()

    @property
    def table(self) -> str:
        return self._table or settings().table_name

    def listed(self, partition: str) -> Iterator[OpenTermination]:
        """One partition of the index ("open" or "stuck"): never a table scan."""
        paginator = self.client.get_paginator("query")
        for page in paginator.paginate(
            TableName=self.table,
            IndexName=OPEN_TERMINATIONS_INDEX,
            KeyConditionExpression=f"{OPEN_TERMINATION} = :partition",
            ExpressionAttributeValues={":partition": {"S": partition}},
        ):
            for attributes in page["Items"]:
                yield _open_termination(from_attributes(attributes))

    def read(self, node_id: str, workload_id: str) -> OpenTermination | None:
        """The termination as it is now (the index lags); None when it is no longer open."""
        response = self.client.get_item(
            TableName=self.table,
            Key=to_attributes({"PK": node_pk(node_id), "SK": WORKLOAD_PREFIX + workload_id}),
            ConsistentRead=True,
        )
        if "Item" not in response:
            return None
        termination = _open_termination(from_attributes(response["Item"]))
        if termination.workload.state is not WorkloadState.TERMINATING:
            return None
        return termination

    def node_queue_url(self, node_id: str) -> str | None:
        response = self.client.get_item(
            TableName=self.table,
            Key=to_attributes({"PK": node_pk(node_id), "SK": NODE_SK}),
            ProjectionExpression="queueUrl",
        )
        url = response.get("Item", {}).get("queueUrl", {}).get("S")
        return str(url) if url else None

    def record_delivery(self, termination: OpenTermination, now: datetime) -> None:
        """One more send that SQS accepted."""
        self._update(
            termination,
            "SET deliveries = if_not_exists(deliveries, :zero) + :one, lastDeliveredAt = :now",
            {":zero": 0, ":one": 1, ":now": format_time(now)},
        )

    def mark_stuck(self, termination: OpenTermination, now: datetime) -> bool:
        """Move it to the index's "stuck" partition; False if it was not open any more."""
        return self._update(
            termination,
            f"SET {OPEN_TERMINATION} = :stuck, stuckAt = :now",
            {":stuck": STUCK, ":now": format_time(now), ":open": OPEN},
            f" AND {OPEN_TERMINATION} = :open",
        )

    def _update(
        self, termination: OpenTermination, update: str, values: dict[str, Any], extra: str = ""
    ) -> bool:
        key = {"PK": node_pk(termination.node_id), "SK": WORKLOAD_PREFIX + termination.workload.id}
        try:
            self.client.update_item(
                TableName=self.table,
                Key=to_attributes(key),
                UpdateExpression=update,
                ConditionExpression="terminationId = :tid" + extra,
                ExpressionAttributeValues=to_attributes(
                    {**values, ":tid": termination.termination_id}
                ),
            )
        except ClientError as error:
            # A report closed it meanwhile: then there is nothing left to record.
            if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True


def _open_termination(item: dict[str, Any]) -> OpenTermination:
    return OpenTermination(
        node_id=item["PK"].removeprefix("NODE#"), workload=workload_from_item(item)
    )
