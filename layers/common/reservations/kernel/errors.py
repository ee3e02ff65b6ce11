"""Errors with the contract's status and code; the HTTP layer maps them to responses.

Each error code is defined once, by its class: its row in the contract's table, its status,
its code, whether a keyed request keeps it for replay (``kept``: the contract's
"Idempotency" list), and what the OpenAPI document says of it (its docstring, as
``documented``). The kernel defines the codes every endpoint may answer; a slice defines its
own refusals (``<slice>/errors.py``). Each class registers itself in :data:`ERRORS`, at its
row, when it is defined; ``kernel.idempotency.rules`` and ``kernel.http.openapi`` derive from
that registry, so nothing else spells a code's facts again, and a reader of the whole table
(the OpenAPI document, the error listings) imports every slice first (``reservations.endpoints``).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar


def field_path(location: Iterable[int | str]) -> str:
    """A validation error's location as every response and message names it: ``ids[2]``,
    ``header.Idempotency-Key``; empty for the document itself."""
    path = ""
    for part in location:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


@dataclass(frozen=True)
class FieldProblem:
    field: str
    problem: str


class ApiError(Exception):
    """An error a client may see, as the contract's table has it: every subclass is one row
    of the table, registered in :data:`ERRORS` at its ``row`` (the order the document lists
    them in), with its status and code, whether a keyed request keeps it (``kept``), and, as
    its docstring, what the OpenAPI document says of it."""

    # Where the contract's table lists it: the rows are spaced by ten, so that a new code
    # takes a free row between two others and no other row moves.
    row: ClassVar[int] = 0
    status: ClassVar[int] = 500
    code: ClassVar[str] = "internal"
    # Whether a request with an Idempotency-Key keeps this answer and replays it: only
    # answers that reached a decision about the domain.
    kept: ClassVar[bool] = False
    documented: ClassVar[str] = "never for anything a client sent"
    # Seconds a client should wait before it tries again (``Retry-After``); None: not sent.
    retry_after: ClassVar[int | None] = None

    def __init_subclass__(
        cls,
        *,
        row: int,
        status: int,
        code: str,
        kept: bool = False,
        retry_after: int | None = None,
    ) -> None:
        super().__init_subclass__()
        cls.row, cls.status, cls.code, cls.kept = row, status, code, kept
        cls.retry_after = retry_after
        cls.documented = " ".join((cls.__doc__ or "").split())
        register(cls)

    def __init__(self, message: str, details: list[FieldProblem] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or []
        # Headers this answer carries besides Content-Type and the class's Retry-After
        # (a 412's current ETag).
        self.headers: tuple[tuple[str, str], ...] = ()


# Every error code's class defined so far, in the contract's order (by row), the base's 500
# first: each joins at its row as it is defined, whichever module defines it first.
ERRORS: list[type[ApiError]] = [ApiError]


def register(error: type[ApiError]) -> None:
    """``error`` into :data:`ERRORS` at its row; a row already taken is a TypeError (two
    codes cannot share a place in the table)."""
    taken = [known.__qualname__ for known in ERRORS if known.row == error.row]
    if taken:
        raise TypeError(f"{error.__qualname__}: row {error.row} is {taken[0]}'s")
    bisect.insort(ERRORS, error, key=lambda known: known.row)


class InvalidRequest(ApiError, row=10, status=400, code="invalid_request"):
    """the body is not a JSON object of the documented fields"""


class Unauthorized(ApiError, row=20, status=401, code="unauthorized"):
    """missing, malformed, unknown, revoked or expired key"""

    def __init__(self) -> None:
        # One message for every cause, so a response never tells which keys exist.
        super().__init__("missing or invalid API key")


class NotFound(ApiError, row=30, status=404, code="not_found"):
    """unknown, not visible, or the key lacks the permission (identical)"""

    def __init__(self) -> None:
        # Unknown, invisible and forbidden must look the same: one message for all.
        super().__init__("not found")


class StorageLimit(ApiError, row=150, status=409, code="storage_limit"):
    """a write would grow a stored item past DynamoDB's 400 KB item size (the node's list
    access item names every org its reservations name); nothing was written. Not kept
    under an Idempotency-Key: once reservations end and leave the history, it fits"""

    def __init__(self) -> None:
        super().__init__(
            "this write would make a stored record larger than DynamoDB's 400 KB item limit "
            "(the node's reservations name too many organisations); nothing was written"
        )


class Conflict(ApiError, row=160, status=409, code="conflict", retry_after=1):
    """the write kept losing to concurrent writers; the same key may retry and then act"""


class IdempotencyInProgress(
    ApiError, row=170, status=409, code="idempotency_in_progress", retry_after=1
):
    """the same Idempotency-Key is still being processed"""


class PreconditionFailed(ApiError, row=180, status=412, code="precondition_failed"):
    """If-Match names none of the current version's tags (a weak tag never matches);
    nothing was done. The answer carries the current ETag. Never kept under an
    Idempotency-Key: the same key may be retried, and a retry whose first try committed
    gets that answer, never this"""

    def __init__(self, etag: tuple[str, str]) -> None:
        super().__init__("If-Match does not match the current ETag; nothing was done")
        self.headers = (etag,)


class IdempotencyKeyReused(ApiError, row=220, status=422, code="idempotency_key_reused"):
    """the same Idempotency-Key with a different request (never kept: the first answer
    stays the one a repeat of the first request gets)"""


class UnsupportedMediaType(ApiError, row=230, status=415, code="unsupported_media_type"):
    """the body is declared as something other than application/json (a charset parameter
    is fine; no Content-Type at all is read as JSON)"""

    def __init__(self) -> None:
        super().__init__(
            "request body must be application/json",
            [FieldProblem("header.Content-Type", "must be application/json")],
        )


class Unavailable(ApiError, row=240, status=503, code="internal", retry_after=2):
    """AWS did not answer within the call's time, or answered that it could not serve the
    call then (its own 5xx, or throttling): an outage; retry (a POST with the same
    Idempotency-Key; a PUT as it was)"""

    def __init__(self) -> None:
        # AWS did not answer within the invocation, or refused it for now: the contract's
        # 5xx, in its shape.
        super().__init__("the service could not answer in time; try again")


def documented_errors(errors: Sequence[type[ApiError]]) -> str:
    """What the OpenAPI document says a response is that answers one of ``errors`` (all of
    one status): the one code with its ``documented`` text, or the codes named in the order
    of :data:`ERRORS`, then each with its text."""
    ordered = sorted(errors, key=ERRORS.index)
    if len(ordered) == 1:
        return f"{ordered[0].code}: {ordered[0].documented}"
    names = [error.code for error in ordered]
    listed = "\n".join(f"- `{error.code}`: {error.documented}" for error in ordered)
    return ", ".join(names[:-1]) + " or " + names[-1] + "\n\n" + listed
