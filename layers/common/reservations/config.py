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


@cache
def settings() -> Settings:
    return Settings(
        table_name=os.environ.get("TABLE_NAME", "ReservationsTable"),
        aws_endpoint=os.environ.get("LOCAL_AWS_ENDPOINT") or None,
        key_cache_ttl_seconds=float(os.environ.get("KEY_CACHE_TTL_SECONDS", "60")),
        idempotency_table_name=os.environ.get("IDEMPOTENCY_TABLE_NAME", "IdempotencyTable"),
    )
