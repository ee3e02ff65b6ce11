"""One conditional TransactWriteItems, and what its cancellation means."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from reservations.kernel.aws import clients
from reservations.kernel.aws.actions import Action
from reservations.kernel.errors import StorageLimit
from reservations.kernel.idempotency.models import AnswerRecord
from reservations.kernel.idempotency.table import record_put, stored_in_cancellation
from reservations.kernel.writes import WriteConflict

# Cancellation reasons that mean "someone else wrote first": re-read and try again.
_RETRYABLE = frozenset({"ConditionalCheckFailed", "TransactionConflict"})


def run(actions: list[Action], token: str | None = None, record_at: int | None = None) -> None:
    """Run the transaction; :class:`WriteConflict` when a condition or a conflict cancels it,
    carrying the idempotency record at action ``record_at`` when that is what cancelled it.

    ``token`` (the write's id) makes the SDK's own retry of a request whose answer was lost
    idempotent: without it, a retry after a commit would fail its version checks and look
    like a lost race.
    """
    request: dict[str, Any] = {"TransactItems": actions}
    if token is not None:
        request["ClientRequestToken"] = token
    try:
        clients.dynamodb().transact_write_items(**request)
    except ClientError as error:
        if _too_large(error):
            raise StorageLimit() from error
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


def _too_large(error: ClientError) -> bool:
    """An item would pass DynamoDB's 400 KB: the whole request refused (a put), or an
    action's cancellation reason (an update that grows an item)."""
    details = error.response.get("Error", {})
    refusals = [details, *error.response.get("CancellationReasons", [])]
    return any(
        str(refusal.get("Code")) in ("ValidationException", "ValidationError")
        and "item size" in str(refusal.get("Message", "")).lower()
        for refusal in refusals
    )


def run_answered(actions: list[Action], token: str | None, answer: AnswerRecord | None) -> None:
    """:func:`run` with the key's record (``answer``), when there is one, as the last action."""
    if answer is None:
        run(actions, token, None)
    else:
        run([*actions, record_put(answer)], token, len(actions))
