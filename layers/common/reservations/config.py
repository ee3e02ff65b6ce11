"""Settings from the function's environment (declared in template.yaml's Globals)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache


@dataclass(frozen=True)
class Settings:
    table_name: str
    # Set only locally (env.json / tests): where the AWS emulator listens. Empty in AWS.
    aws_endpoint: str | None
    key_cache_ttl_seconds: float
    idempotency_table_name: str
    # The sweeper: how long a committed termination may stay unqueued, how long a queued
    # one may stay unconfirmed, and how many deliveries before it gives up.
    sweeper_grace_seconds: float
    confirm_deadline_seconds: float
    max_deliveries: int


@cache
def settings() -> Settings:
    return Settings(
        table_name=os.environ.get("TABLE_NAME", "ReservationsTable"),
        aws_endpoint=os.environ.get("LOCAL_AWS_ENDPOINT") or None,
        key_cache_ttl_seconds=float(os.environ.get("KEY_CACHE_TTL_SECONDS", "60")),
        idempotency_table_name=os.environ.get("IDEMPOTENCY_TABLE_NAME", "IdempotencyTable"),
        sweeper_grace_seconds=float(os.environ.get("SWEEPER_GRACE_SECONDS", "60")),
        confirm_deadline_seconds=float(
            os.environ.get("TERMINATION_CONFIRM_DEADLINE_SECONDS", "600")
        ),
        max_deliveries=int(os.environ.get("TERMINATION_MAX_DELIVERIES", "5")),
    )
