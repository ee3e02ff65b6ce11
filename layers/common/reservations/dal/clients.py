"""AWS clients, made on first use and kept for the container's life (never at import)."""

from __future__ import annotations

from functools import cache
from typing import Any

import boto3
from botocore.config import Config

from reservations.config import settings

_CONFIG = Config(connect_timeout=2, read_timeout=5, retries={"max_attempts": 3, "mode": "standard"})


@cache
def dynamodb() -> Any:
    return boto3.client("dynamodb", endpoint_url=settings().aws_endpoint, config=_CONFIG)


@cache
def sqs() -> Any:
    return boto3.client("sqs", endpoint_url=settings().aws_endpoint, config=_CONFIG)


def reset() -> None:
    """Forget made clients and settings (tests switch endpoints between cases)."""
    dynamodb.cache_clear()
    sqs.cache_clear()
    settings.cache_clear()
