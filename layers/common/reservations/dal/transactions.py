"""One conditional TransactWriteItems, and what its cancellation means."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from reservations.dal import clients

# Cancellation reasons that mean "someone else wrote first": re-read and try again.
_RETRYABLE = frozenset({"ConditionalCheckFailed", "TransactionConflict"})


class WriteConflict(Exception):
    """The write lost to a concurrent writer (or met a stored answer); nothing was changed.

    ``reasons`` are the cancellation reasons, one per action, in the order of the actions.
    """

    def __init__(self, reasons: list[dict[str, Any]]) -> None:
        codes = sorted({r.get("Code", "None") for r in reasons} - {"None"}) or ["unknown"]
        super().__init__(", ".join(codes))
        self.reasons = reasons


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
        # One reason per action, in order; a failed condition's may carry the item (ALL_OLD).
        reasons = [dict(reason) for reason in error.response.get("CancellationReasons", [])]
        codes = {reason.get("Code", "None") for reason in reasons} - {"None"}
        if codes and codes <= _RETRYABLE:
            raise WriteConflict(reasons) from error
        if not codes and "TransactionConflict" in str(error):
            raise WriteConflict(reasons) from error
        raise
