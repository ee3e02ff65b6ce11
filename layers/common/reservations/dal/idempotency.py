"""Idempotency records, written in the same request as the effect they answer for.

An effect's transaction carries the record's Put, conditioned on there being no live record:
a repeat, or a concurrent twin, has its transaction cancelled on that item and reads the first
answer from the cancellation reason (``ReturnValuesOnConditionCheckFailure: ALL_OLD``). No
in-progress state, no window between the effect and its record, no extra request.
"""

from __future__ import annotations

from typing import Any

from reservations.dal.actions import Action, table
from reservations.dal.items import (
    from_attributes,
    idempotency_item,
    stored_response_from_item,
    to_attributes,
)
from reservations.models.idempotency import AnswerRecord, StoredResponse

# Absent, or expired and only waiting for TTL to delete it.
_NO_LIVE_RECORD = "attribute_not_exists(PK) OR expiresAtEpoch <= :now"


def record_put(answer: AnswerRecord) -> Action:
    """The record as one action of the effect's TransactWriteItems (or a PutItem alone)."""
    return {
        "Put": {
            "TableName": table(),
            "Item": to_attributes(idempotency_item(answer)),
            "ConditionExpression": _NO_LIVE_RECORD,
            "ExpressionAttributeValues": {":now": {"N": str(int(answer.created_at.timestamp()))}},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
    }


def stored_in_cancellation(reasons: list[dict[str, Any]], index: int) -> StoredResponse | None:
    """The record that cancelled a transaction at action ``index``, if that is what did."""
    if index >= len(reasons):
        return None
    reason = reasons[index]
    if reason.get("Code") != "ConditionalCheckFailed" or "Item" not in reason:
        return None
    return stored_response_from_item(from_attributes(reason["Item"]))
