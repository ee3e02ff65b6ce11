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
    # The sweeper: how long a committed termination waits for the reclaim's own send, how
    # long a delivered one may stay unreported, how many deliveries before it is flagged
    # stuck, and the slow pace at which a stuck one is still sent.
    sweeper_grace_seconds: float
    confirm_deadline_seconds: float
    max_deliveries: int
    stuck_resend_seconds: float


@cache
def settings() -> Settings:
    return Settings(
        table_name=os.environ.get("TABLE_NAME", "ReservationsTable"),
        aws_endpoint=os.environ.get("LOCAL_AWS_ENDPOINT") or None,
        key_cache_ttl_seconds=float(os.environ.get("KEY_CACHE_TTL_SECONDS", "60")),
        sweeper_grace_seconds=float(os.environ.get("SWEEPER_GRACE_SECONDS", "60")),
        confirm_deadline_seconds=float(
            os.environ.get("TERMINATION_CONFIRM_DEADLINE_SECONDS", "600")
        ),
        max_deliveries=int(os.environ.get("TERMINATION_MAX_DELIVERIES", "5")),
        stuck_resend_seconds=float(os.environ.get("STUCK_RESEND_SECONDS", "3600")),
    )
