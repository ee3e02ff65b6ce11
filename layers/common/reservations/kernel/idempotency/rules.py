"""Idempotency-Key: what a key is scoped to, what counts as the same request, what is kept.

A repeat is answered with the first answer only when that answer reached a decision about
the domain; answers that say "try again" (400, 401, 404, 409 conflict, 5xx) are not kept, so
the same key may be retried and then acts. Which error codes are kept is each code's own
fact (``kernel.errors``, ``kept``).
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta
from typing import Any

from reservations.kernel.errors import ERRORS, FieldProblem, InvalidRequest
from reservations.kernel.idempotency.models import IdempotentRequest, StoredResponse

HEADER = "Idempotency-Key"
KEPT_FOR = timedelta(hours=24)


def check_header(value: str) -> None:
    """400 naming the header unless it is 1-255 printable ASCII characters."""
    if not 1 <= len(value) <= 255 or not all(" " <= ch <= "~" for ch in value):
        raise InvalidRequest(
            f"{HEADER} must be 1-255 printable characters",
            [FieldProblem(HEADER, "must be 1-255 printable ASCII characters")],
        )


def keyed_request(
    key_hash: str, idempotency_key: str, method: str, path: str, body: Any
) -> IdempotentRequest:
    """The record's scope (this API key and this header) and the request's fingerprint.

    ``body`` is the parsed, validated body, so key order, whitespace and defaults do not
    make two requests differ.
    """
    scope = hashlib.sha256(f"{key_hash}\n{idempotency_key}".encode()).hexdigest()
    canonical = json.dumps(
        {"method": method, "path": path, "body": body}, sort_keys=True, separators=(",", ":")
    )
    return IdempotentRequest(scope, hashlib.sha256(canonical.encode()).hexdigest())


def is_kept(status: int, code: str | None = None) -> bool:
    """Whether an answer with this status (and error code) is stored for replay."""
    if 200 <= status < 300:
        return True
    return any(error.kept and (error.status, error.code) == (status, code) for error in ERRORS)


def is_live(stored: StoredResponse, now: datetime) -> bool:
    """A record past its expiry is absent, whenever the table's TTL gets to delete it."""
    return now < stored.expires_at


def same_request(stored: StoredResponse, request: IdempotentRequest) -> bool:
    return stored.request_hash == request.request_hash
