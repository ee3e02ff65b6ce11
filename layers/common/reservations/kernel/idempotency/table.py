"""Idempotency records, written in the same request as the effect they answer for.

An effect's transaction carries the record's Put, conditioned on there being no live record:
a repeat, or a concurrent twin, has its transaction cancelled on that item and reads the first
answer from the cancellation reason (``ReturnValuesOnConditionCheckFailure: ALL_OLD``). No
in-progress state, no window between the effect and its record, no extra request.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from reservations.kernel.aws import clients
from reservations.kernel.aws.actions import Action, table
from reservations.kernel.aws.codec import EXPIRES_AT_EPOCH, Item, from_attributes, to_attributes
from reservations.kernel.aws.queries import get_item
from reservations.kernel.idempotency.models import AnswerRecord, Outcome, StoredResponse
from reservations.kernel.times import format_time, parse_time

# Absent, or expired and only waiting for TTL to delete it.
_NO_LIVE_RECORD = "attribute_not_exists(PK) OR expiresAtEpoch <= :now"

IDEMPOTENCY_PREFIX = "IDEMPOTENCY#"
IDEMPOTENCY_SK = "RESPONSE"


def idempotency_key(scope: str) -> Item:
    """Idempotency records live in their own partitions, outside every other."""
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
        EXPIRES_AT_EPOCH: int(answer.expires_at.timestamp()),
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


def keep_answer(answer: AnswerRecord) -> StoredResponse | None:
    """Keep an answer that needed no other write (one PutItem); the live record if one
    won instead (it comes back with the error, ALL_OLD)."""
    try:
        clients.dynamodb().put_item(**record_put(answer)["Put"])
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        existing: dict[str, Any] = error.response["Item"]  # type: ignore[typeddict-item]
        return stored_response_from_item(from_attributes(existing))
    return None


def stored_answer(scope: str) -> StoredResponse | None:
    """The record kept under ``scope`` (live or not), read strongly consistent; one
    GetItem, for a repeat whose effect left nothing to conflict with."""
    item = get_item(idempotency_key(scope))
    return stored_response_from_item(item) if item else None
