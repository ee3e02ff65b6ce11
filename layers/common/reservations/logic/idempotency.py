"""Idempotency-Key for every POST: the first answer is kept with the effect and replayed.

A use case asks :func:`keyed` for the request (after the body is valid), adds
:func:`record_actions` to its transaction, asks :func:`answer_from_conflict` when that
transaction is cancelled, and passes deterministic refusals through :func:`refuse`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, NoReturn

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from reservations.dal import idempotency as records
from reservations.dal.transactions import WriteConflict
from reservations.models.api import error_json
from reservations.models.domain import Caller
from reservations.models.errors import ApiError, IdempotencyKeyReused
from reservations.models.idempotency import IdempotentRequest, Outcome, StoredResponse
from reservations.rules.idempotency import (
    KEPT_FOR,
    check_header,
    is_kept,
    is_live,
    keyed_request,
    same_request,
)

logger = Logger()
metrics = Metrics()


def keyed(
    caller: Caller, header: str | None, method: str, path: str, body: Any
) -> IdempotentRequest | None:
    """The keyed request, or None without the header; 400 for a malformed header."""
    if header is None:
        return None
    check_header(header)
    return keyed_request(caller.key_hash, header, method, path, body)


def record_actions(
    request: IdempotentRequest | None, outcome: Outcome, now: datetime
) -> list[dict[str, Any]]:
    """The record's Put for the effect's transaction (none for an unkeyed request)."""
    if request is None:
        return []
    return [records.record_put(request, outcome, now, now + KEPT_FOR)]


def answer_from_conflict(
    request: IdempotentRequest | None, conflict: WriteConflict, index: int, now: datetime
) -> Outcome | None:
    """The first answer, when it is the record at ``index`` that cancelled the transaction."""
    if request is None:
        return None
    stored = records.stored_in_cancellation(conflict.reasons, index)
    if stored is None or not is_live(stored, now):
        return None
    return replay(request, stored)


def refuse(request: IdempotentRequest | None, error: ApiError, now: datetime) -> Outcome:
    """Raise ``error``, keeping it first when it is a decision; replay a first answer instead."""
    if request is not None and is_kept(error.status, error.code):
        refusal = Outcome(error.status, error_json(error))
        stored = records.store(request, refusal, now, now + KEPT_FOR)
        if stored is not None:
            return replay(request, stored)
    raise error


def replay(request: IdempotentRequest, stored: StoredResponse) -> Outcome:
    """The stored answer, byte for byte; 422 when the key was first used for another request."""
    if not same_request(stored, request):
        _reused()
    logger.info("idempotent replay", extra={"status": stored.outcome.status})
    metrics.add_metric(name="IdempotentReplays", unit=MetricUnit.Count, value=1)
    return stored.outcome


def _reused() -> NoReturn:
    raise IdempotencyKeyReused("Idempotency-Key was already used with a different request")
