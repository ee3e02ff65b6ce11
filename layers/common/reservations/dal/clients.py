"""AWS clients, made on first use and kept for the container's life (never at import).

No endpoint is passed: boto3 reads the standard ``AWS_ENDPOINT_URL`` itself, which only the
local stack and the tests set (empty or unset means AWS's own endpoints).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import boto3
from botocore.config import Config

from reservations.config import settings

# Bounded, because the API functions answer within their 10 s timeout whatever AWS does.
# DynamoDB is the answer itself: a few short tries (each well under a second when healthy).
# SQS comes after the commit, so a slow or hanging SQS gets one short try and the sweeper
# delivers the rest: worst case 1 s to connect + 2 s to read per batch, then the send stops.
DYNAMODB_CONFIG = Config(
    connect_timeout=1, read_timeout=2, retries={"total_max_attempts": 3, "mode": "standard"}
)
SQS_CONFIG = Config(
    connect_timeout=1, read_timeout=2, retries={"total_max_attempts": 1, "mode": "standard"}
)


@cache
def dynamodb() -> Any:
    """The functions' DynamoDB client (bounded timeouts, a few short tries)."""
    return boto3.client("dynamodb", config=DYNAMODB_CONFIG)


@cache
def sqs() -> Any:
    """The functions' SQS client (one short try: the sweeper delivers what it misses)."""
    return boto3.client("sqs", config=SQS_CONFIG)


def reset() -> None:
    """Forget made clients and settings (tests switch endpoints between cases)."""
    dynamodb.cache_clear()
    sqs.cache_clear()
    settings.cache_clear()
