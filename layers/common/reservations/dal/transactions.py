"""One conditional TransactWriteItems, and what its cancellation means."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from reservations.config import settings
from reservations.dal import clients
from reservations.dal.idempotency import stored_in_cancellation
from reservations.dal.items import node_key, to_attributes
from reservations.models.writes import TopologyRead, WriteConflict

# Cancellation reasons that mean "someone else wrote first": re-read and try again.
_RETRYABLE = frozenset({"ConditionalCheckFailed", "TransactionConflict"})


def commit(
    actions: list[dict[str, Any]], token: str | None = None, record_at: int | None = None
) -> None:
    """Run the transaction; :class:`WriteConflict` when a condition or a conflict cancels it,
    carrying the idempotency record at action ``record_at`` when that is what cancelled it.

    ``token`` (the reclaim id) makes the SDK's own retry of a request whose answer was lost
    idempotent: without it, a retry after a commit would fail its version checks and look
    like a lost race.
    """
    request: dict[str, Any] = {"TransactItems": actions}
    if token is not None:
        request["ClientRequestToken"] = token
    try:
        clients.dynamodb().transact_write_items(**request)
    except ClientError as error:
        if error.response["Error"]["Code"] != "TransactionCanceledException":
            raise
        # One reason per action, in order; a failed condition's may carry the item (ALL_OLD).
        reasons = [dict(reason) for reason in error.response.get("CancellationReasons", [])]
        codes = {str(reason.get("Code", "None")) for reason in reasons} - {"None"}
        retryable = codes <= _RETRYABLE if codes else "TransactionConflict" in str(error)
        if not retryable:
            raise
        stored = None if record_at is None else stored_in_cancellation(reasons, record_at)
        raise WriteConflict(", ".join(sorted(codes)) or "unknown", stored) from error


def topology_check(read: TopologyRead) -> dict[str, Any]:
    """The node's topology generation still as read: only a node update moves it, and only
    a node update changes which reservations a topology change has put under review."""
    check: dict[str, Any] = {
        "TableName": settings().table_name,
        "Key": to_attributes(node_key(read.node_id)),
        "ConditionExpression": "attribute_not_exists(topologyGen)",
    }
    if read.topology_gen is not None:
        check["ConditionExpression"] = "topologyGen = :gen"
        check["ExpressionAttributeValues"] = {":gen": {"N": str(read.topology_gen)}}
    return {"ConditionCheck": check}
