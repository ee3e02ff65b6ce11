"""What idempotency keeps: the request a key was first used for and the answer it got."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Outcome:
    """An HTTP answer the logic decided: its status, its exact body and the headers it
    carries besides Content-Type (a create's Location), all replayed as they were."""

    status: int
    body: str
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class IdempotentRequest:
    """A keyed request: ``scope`` names the record, ``request_hash`` what it was used for."""

    scope: str
    request_hash: str


@dataclass(frozen=True)
class StoredResponse:
    """The first answer to a keyed request, replayed byte for byte until ``expires_at``."""

    request_hash: str
    outcome: Outcome
    expires_at: datetime


@dataclass(frozen=True)
class AnswerRecord:
    """An answer to keep for a keyed request: written only if no live record exists."""

    request: IdempotentRequest
    outcome: Outcome
    created_at: datetime
    expires_at: datetime
