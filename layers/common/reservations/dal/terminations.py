"""Closing a termination (reported by the node) and the sweeper's view of open ones."""

from __future__ import annotations

import contextlib
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
STUCK = "stuck"
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
    node_id: str
    workload: Workload
    delivery_attempts: int
    last_sent_at: datetime | None


def open_terminations() -> Iterator[OpenTermination]:
    """Every open termination, from the sparse index (never a table scan)."""
    paginator = clients.dynamodb().get_paginator("query")
    for page in paginator.paginate(
        TableName=settings().table_name,
        IndexName=OPEN_TERMINATIONS_INDEX,
        KeyConditionExpression=f"{OPEN_TERMINATION} = :open",
        ExpressionAttributeValues={":open": {"S": OPEN}},
    ):
        for attributes in page["Items"]:
            item = from_attributes(attributes)
            workload = workload_from_item(item)
            yield OpenTermination(
                node_id=item["PK"].removeprefix("NODE#"),
                workload=workload,
                delivery_attempts=int(item.get("deliveryAttempts", 0)),
                last_sent_at=workload.queued_at,
            )


def node_queue_url(node_id: str) -> str | None:
    response = clients.dynamodb().get_item(
        TableName=settings().table_name,
        Key=to_attributes({"PK": node_pk(node_id), "SK": NODE_SK}),
        ProjectionExpression="queueUrl",
    )
    url = response.get("Item", {}).get("queueUrl", {}).get("S")
    return str(url) if url else None


def record_redelivery(termination: OpenTermination, sent: bool, now: datetime) -> None:
    """Count one more delivery attempt; stamp ``queuedAt`` when the message went out."""
    update = "SET deliveryAttempts = if_not_exists(deliveryAttempts, :zero) + :one"
    values: dict[str, Any] = {":zero": 0, ":one": 1, ":tid": termination.workload.termination_id}
    if sent:
        update += ", queuedAt = :now"
        values[":now"] = format_time(now)
    _update_open(termination, update, values)


def give_up(termination: OpenTermination, now: datetime) -> None:
    """Out of the sweeper's index and visibly stuck: an operator has to look."""
    _update_open(
        termination,
        f"SET {OPEN_TERMINATION} = :stuck, stuckAt = :now",
        {":stuck": STUCK, ":now": format_time(now), ":tid": termination.workload.termination_id},
    )


def _update_open(termination: OpenTermination, update: str, values: dict[str, Any]) -> None:
    client = clients.dynamodb()
    key = {"PK": node_pk(termination.node_id), "SK": WORKLOAD_PREFIX + termination.workload.id}
    # A report may have closed it meanwhile: then there is nothing left to do.
    with contextlib.suppress(client.exceptions.ConditionalCheckFailedException):
        client.update_item(
            TableName=settings().table_name,
            Key=to_attributes(key),
            UpdateExpression=update,
            ConditionExpression="terminationId = :tid",
            ExpressionAttributeValues=to_attributes(values),
        )
