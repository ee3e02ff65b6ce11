"""Idempotency-Key for every POST: the first answer is kept with the effect and replayed.

The write pipeline (``kernel.pipeline``) asks :func:`keyed` for the request (after the body
is valid), writes :func:`answer_record` with its effect, asks :func:`answer_from_conflict`
when that write is cancelled, and passes refusals through :func:`refuse`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any, NoReturn

from aws_lambda_powertools.metrics import MetricUnit

from reservations.kernel.caller import Caller
from reservations.kernel.errors import ApiError, IdempotencyKeyReused
from reservations.kernel.idempotency.models import (
    AnswerRecord,
    IdempotentRequest,
    Outcome,
    StoredResponse,
)
from reservations.kernel.idempotency.rules import (
    KEPT_FOR,
    check_header,
    is_kept,
    is_live,
    keyed_request,
    same_request,
)
from reservations.kernel.observability import logger, metrics
from reservations.kernel.wire import error_json
from reservations.kernel.writes import WriteConflict

# The mark on a replayed answer; its status and body are the first answer's, byte for byte.
REPLAYED = ("Idempotent-Replayed", "true")

# Writes the record unless a live one exists; returns that one then (a conditional Put).
KeepAnswer = Callable[[AnswerRecord], StoredResponse | None]


def keyed(
    caller: Caller, header: str | None, method: str, path: str, body: Any
) -> IdempotentRequest | None:
    """The keyed request, or None without the header; 400 for a malformed header."""
    if header is None:
        return None
    check_header(header)
    return keyed_request(caller.key_hash, header, method, path, body)


def answer_record(
    request: IdempotentRequest | None, outcome: Outcome, now: datetime
) -> AnswerRecord | None:
    """The record to write with the effect (none for an unkeyed request)."""
    if request is None:
        return None
    return AnswerRecord(request, outcome, now, now + KEPT_FOR)


def answer_from_conflict(
    request: IdempotentRequest | None, conflict: WriteConflict, now: datetime
) -> Outcome | None:
    """The first answer, when it is a live record of this key that cancelled the write."""
    stored = conflict.stored
    if request is None or stored is None or not is_live(stored, now):
        return None
    return replay(request, stored)


def refuse(
    request: IdempotentRequest | None, error: ApiError, now: datetime, keep: KeepAnswer
) -> Outcome:
    """Raise ``error``, keeping it first when it is a decision; replay a first answer instead."""
    if request is not None and is_kept(error.status, error.code):
        stored = keep(
            AnswerRecord(request, Outcome(error.status, error_json(error)), now, now + KEPT_FOR)
        )
        if stored is not None:
            return replay(request, stored)
    raise error


def first_answer(
    request: IdempotentRequest | None,
    stored_answer: Callable[[str], StoredResponse | None],
    now: datetime,
) -> Outcome | None:
    """The key's live first answer, read with one GetItem, for the paths that cannot meet
    it in a write (one whose first try's commit made its refusal true). None without a key
    or a live record."""
    if request is None:
        return None
    stored = stored_answer(request.scope)
    if stored is None or not is_live(stored, now):
        return None
    return replay(request, stored)


def replay(request: IdempotentRequest, stored: StoredResponse) -> Outcome:
    """The stored answer, byte for byte; 422 when the key was first used for another request."""
    if not same_request(stored, request):
        _reused()
    logger.info("idempotent replay", extra={"status": stored.outcome.status})
    metrics.add_metric(name="IdempotentReplays", unit=MetricUnit.Count, value=1)
    return replace(stored.outcome, headers=(*stored.outcome.headers, REPLAYED))


def _reused() -> NoReturn:
    raise IdempotencyKeyReused("Idempotency-Key was already used with a different request")
