"""Retries as the API's contract allows them, in one place: the transport under every call.

Only a request that is safe to repeat is tried again: a GET, PUT or DELETE, or a POST or
PATCH with an ``Idempotency-Key``, which the client makes itself when the caller gave none,
so a retried write that had committed answers with its first outcome instead of acting
twice. Only on 429, a 5xx, and a 409 whose code is ``conflict`` or
``idempotency_in_progress``; every other answer is the answer. ``Retry-After`` is honoured
(never sooner; a wait longer than ``longest_wait`` is not made, the answer is returned);
otherwise the wait is exponential backoff with full jitter. ``tries`` bounds it all.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus

import httpx

from reservations_client.errors import error_body

IDEMPOTENCY_KEY = "Idempotency-Key"
KEYED_METHODS = frozenset({"POST", "PATCH", "DELETE"})  # the writes that take a key
RETRIED_CONFLICTS = frozenset({"conflict", "idempotency_in_progress"})


def _full_jitter(most: float) -> float:
    return random.uniform(0, most)  # noqa: S311 - spreading retries, not a secret


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to try. ``sleep`` and ``jitter`` are parameters so that tests
    can see the waits without making them."""

    tries: int = 4  # the first try and three retries
    base: float = 0.5  # seconds: the first backoff's ceiling, doubled each retry
    cap: float = 8.0  # seconds: no backoff ceiling above this
    longest_wait: float = 60.0  # seconds: a longer Retry-After is not waited for
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    jitter: Callable[[float], float] = field(default=_full_jitter, repr=False)

    def wait(self, retry: int, retry_after: float | None) -> float | None:
        """Seconds before retry number ``retry`` (0-based), or None: do not retry."""
        if retry + 1 >= self.tries:
            return None
        backoff = self.jitter(min(self.cap, self.base * 2**retry))
        if retry_after is None:
            return backoff
        return None if retry_after > self.longest_wait else max(retry_after, backoff)


NO_RETRIES = RetryPolicy(tries=1)


def retryable_answer(response: httpx.Response) -> bool:
    """429, 5xx, or a 409 the contract says to try again."""
    if response.status_code == HTTPStatus.CONFLICT:
        response.read()
        return error_body(response.content).get("code") in RETRIED_CONFLICTS
    return response.status_code == HTTPStatus.TOO_MANY_REQUESTS or response.status_code >= 500


def retry_after(response: httpx.Response) -> float | None:
    """``Retry-After`` in seconds (the API sends seconds; a date is read as absent)."""
    value = response.headers.get("retry-after", "").strip()
    return float(value) if value.isdigit() else None


class RetryingTransport(httpx.BaseTransport):
    """An httpx transport that keys every write and retries by the policy."""

    def __init__(self, inner: httpx.BaseTransport, policy: RetryPolicy) -> None:
        self.inner = inner
        self.policy = policy

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method in KEYED_METHODS and IDEMPOTENCY_KEY not in request.headers:
            request.headers[IDEMPOTENCY_KEY] = f"client-{uuid.uuid4()}"
        retry = 0
        while True:
            response = self.inner.handle_request(request)
            if not retryable_answer(response):
                return response
            wait = self.policy.wait(retry, retry_after(response))
            if wait is None:
                return response
            response.read()
            response.close()
            self.policy.sleep(wait)
            retry += 1

    def close(self) -> None:
        self.inner.close()
