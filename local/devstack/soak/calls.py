"""The soak's calls to the API over HTTP, each attempt recorded for the auditor: a 503 or a
409 ``conflict`` is tried again after its ``Retry-After`` with the same ``Idempotency-Key``
(the contract's rule), for up to three minutes: a stack loaded for a minute answers 503
to every try of it, and a client keeps trying; a connection the local stack dropped, too
(recorded with status 0: no answer)."""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx

RETRIED_CONFLICTS = {"conflict", "idempotency_in_progress"}
RETRY_SECONDS = 180


@dataclass
class Answer:
    status: int
    body: Any = None

    @property
    def items(self) -> list[Any]:
        return list(self.body.get("items", [])) if isinstance(self.body, dict) else []


@dataclass
class Calls:
    """The API at ``base`` with each role's key; every attempt of every call recorded."""

    base: str
    keys: dict[str, str]
    seed: int
    attempts: list[dict[str, Any]] = field(default_factory=list)
    ops: Counter[str] = field(default_factory=Counter)
    transport_errors: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)
        self._local = threading.local()

    def _client(self) -> httpx.Client:
        client = getattr(self._local, "client", None)
        if client is None:
            client = self._local.client = httpx.Client(base_url=self.base, timeout=60)
        return client

    def call(
        self,
        actor: str,
        role: str,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: dict[str, str] | None = None,
        op: str | None = None,
    ) -> Answer:
        """One logical call (a write keyed: POST, PATCH, DELETE), tried until it has an
        answer that is not a 503 or a conflict."""
        number = next(self._numbers)
        name, op = f"{actor}-{number}", op or f"{method} {path.split('/')[-1]}"
        headers = {"Authorization": f"Bearer {self.keys[role]}"}
        if method in ("POST", "PATCH", "DELETE"):
            headers["Idempotency-Key"] = f"soak-{self.seed}-{name}"
        with self._lock:
            self.ops[f"{actor} {op}"] += 1
        deadline = time.monotonic() + RETRY_SECONDS
        while True:
            answer, wait = self._attempt(name, actor, op, method, path, headers, body, params)
            if wait is None or time.monotonic() + wait > deadline:
                return answer
            time.sleep(wait)

    def _attempt(
        self,
        name: str,
        actor: str,
        op: str,
        method: str,
        path: str,
        headers: dict[str, str],
        body: Any,
        params: dict[str, str] | None,
    ) -> tuple[Answer, float | None]:
        started = time.perf_counter()
        try:
            response = self._client().request(
                method, path, headers=headers, json=body, params=params
            )
        except httpx.TransportError as error:
            self._record(name, actor, op, 0, None, time.perf_counter() - started)
            self.count_error(f"{op}: {type(error).__name__}")
            return Answer(0), 1.0
        took = time.perf_counter() - started
        after = response.headers.get("retry-after")
        self._record(name, actor, op, response.status_code, after, took)
        answer = Answer(response.status_code, _json(response))
        code = answer.body.get("code") if isinstance(answer.body, dict) else None
        again = answer.status == 503 or (answer.status == 409 and code in RETRIED_CONFLICTS)
        return answer, (float(after) if after and after.isdigit() else 1.0) if again else None

    def _record(
        self, name: str, actor: str, op: str, status: int, after: str | None, seconds: float
    ) -> None:
        with self._lock:
            self.attempts.append(
                {
                    "call": name,
                    "op": op,
                    "actor": actor,
                    "status": status,
                    "retryAfter": after,
                    "ms": round(seconds * 1000, 1),
                }
            )

    def count_error(self, what: str) -> None:
        with self._lock:
            self.transport_errors[what] += 1

    def answers(self) -> Counter[str]:
        """Each call's last answer, by operation and status."""
        with self._lock:
            last = {a["call"]: a for a in self.attempts}
        return Counter(f"{a['op']} {a['status']}" for a in last.values())


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None
