"""A fleet node's past: its ended reservations go to the node's history (``NODEHIST#``), not
its partition, as the service would have moved them, written fast (BatchWriteItem, 25 items
a request, unprocessed items sent again); and the made-up past a node's
``generatedPastReservations`` asks for."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from reservations.kernel.aws import codec
from reservations.lifecycle.rules.history import retained_until
from reservations.nodes.models.partition import Node, Reservation, ReservationStatus
from reservations.nodes.rules.status import effective_status
from reservations.nodes.table import items
from reservations.nodes.table import keys as table_keys

BATCH_WRITE_ITEMS = 25  # BatchWriteItem's limit
BATCH_ATTEMPTS = 8
BATCH_BACKOFF_SECONDS = 0.05  # doubled at each attempt
ENDED = frozenset({ReservationStatus.CANCELLED, ReservationStatus.EXPIRED})
# The made-up past: one reservation every half hour, back from the load, so 10,000 of them
# span some 208 days, within the default retention.
PAST_STEP = timedelta(minutes=30)
PAST_ORG = "org-past-customer"


def is_ended(reservation: Reservation, node: Node, at: datetime) -> bool:
    """Cancelled or expired at ``at``: history, not the node's present."""
    return effective_status(reservation, node, at) in ENDED


def generated_past(node: Node, unit_id: str, count: int, loaded_at: datetime) -> list[Reservation]:
    """``count`` ended reservations of ``unit_id``, alternately expired and cancelled, the
    n-th ending n half hours before the load (ids ``past-<n>``, which no id the API makes
    can be: those start ``res-``)."""
    made = []
    end = loaded_at.replace(microsecond=0)
    for n in range(1, count + 1):
        ends_at = end - n * PAST_STEP
        starts_at = ends_at - PAST_STEP
        cancelled = n % 2 == 0
        made.append(
            Reservation(
                id=f"past-{n:06d}",
                node_id=node.id,
                status=ReservationStatus.CANCELLED if cancelled else ReservationStatus.ACTIVE,
                starts_at=starts_at,
                ends_at=ends_at,
                allowed_org_ids=(PAST_ORG,),
                reserved_unit_ids=(unit_id,),
                topology_gen=node.topology_gen,
                created_at=starts_at,
                updated_at=ends_at - timedelta(minutes=1) if cancelled else starts_at,
            )
        )
    return made


def history_items(ended: Iterable[Reservation], retention_days: int) -> list[codec.Item]:
    return [
        items.reservation_history_item(reservation, retained_until(reservation, retention_days))
        for reservation in ended
    ]


def stored_history(client: Any, table: str, node_id: str) -> dict[str, int]:
    """Sort key -> version of every item in the node's history (one consistent pass)."""
    stored: dict[str, int] = {}
    for page in client.get_paginator("query").paginate(
        TableName=table,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": table_keys.node_history_pk(node_id)}},
        ProjectionExpression="SK, version",
        ConsistentRead=True,
    ):
        for item in page["Items"]:
            stored[item["SK"]["S"]] = int(item.get("version", {}).get("N", "0"))
    return stored


def write_history(
    client: Any,
    table: str,
    node_id: str,
    history: Sequence[codec.Item],
    present: dict[str, int | None],
) -> None:
    """Replace the node's history with ``history``: each item one version past the stored
    one (in the history or, for a reservation that ended since, in the node's partition),
    and the items the file no longer has deleted."""
    stored = stored_history(client, table, node_id)
    requests: list[dict[str, Any]] = []
    for item in history:
        read = max(stored.get(item["SK"], 0), present.get(item["SK"]) or 0)
        versioned = codec.to_attributes({**item, "version": read + 1})
        requests.append({"PutRequest": {"Item": versioned}})
    keep = {item["SK"] for item in history}
    pk = table_keys.node_history_pk(node_id)
    for sort_key in stored.keys() - keep:
        key = {"PK": {"S": pk}, "SK": {"S": sort_key}}
        requests.append({"DeleteRequest": {"Key": key}})
    for start in range(0, len(requests), BATCH_WRITE_ITEMS):
        batch_write(client, table, requests[start : start + BATCH_WRITE_ITEMS])


class HistoryNotWritten(Exception):
    """DynamoDB kept leaving part of a batch unprocessed."""


def batch_write(client: Any, table: str, requests: list[dict[str, Any]]) -> None:
    """One BatchWriteItem, and again for what DynamoDB left unprocessed (with backoff)."""
    pending = {table: requests}
    for attempt in range(BATCH_ATTEMPTS):
        unprocessed = client.batch_write_item(RequestItems=pending).get("UnprocessedItems")
        if not unprocessed:
            return
        pending = unprocessed
        time.sleep(BATCH_BACKOFF_SECONDS * 2**attempt)
    raise HistoryNotWritten(f"DynamoDB kept {len(pending[table])} history items unprocessed")
