"""AWS clients, made on first use and kept for the container's life (never at import).

No endpoint is passed: boto3 reads the standard ``AWS_ENDPOINT_URL`` itself, which only the
local stack and the tests set (empty or unset means AWS's own endpoints).
"""

from __future__ import annotations

import time
from functools import cache
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError

from reservations.kernel.settings import settings

# Bounded, because the API functions answer within their 10 s timeout whatever AWS does.
# DynamoDB is the answer itself: a few short tries (each well under a second when healthy).
# SQS comes after the commit, so a slow or hanging SQS gets one short try and a scheduled
# pass delivers the rest: worst case 1 s to connect + 2 s to read per batch, then the send stops.
DYNAMODB_CONFIG = Config(
    connect_timeout=1, read_timeout=2, retries={"total_max_attempts": 3, "mode": "standard"}
)
SQS_CONFIG = Config(
    connect_timeout=1, read_timeout=2, retries={"total_max_attempts": 1, "mode": "standard"}
)


# One try's worst case under these configurations: 1 s to connect, 2 s to read.
ATTEMPT_SECONDS = 3.0
# Left for the answer itself once the last try gave up.
ANSWER_SECONDS = 0.5


class DeadlineReached(BotoCoreError):
    """No time left in the invocation for another try: give up with the contract's 5xx
    rather than let the function time out (API Gateway would answer in its own words)."""

    fmt = "no time left for another {service} request in this invocation"


class _Deadline:
    """When the request in hand must have its answer (monotonic seconds), if any."""

    at: float | None = None


_deadline = _Deadline()


def start_request(seconds_left: float) -> None:
    """From now on, no AWS try starts that could end after the invocation's own end."""
    _deadline.at = time.monotonic() + seconds_left - ANSWER_SECONDS


def end_request() -> None:
    _deadline.at = None


def _check_deadline(event_name: str = "", **_: Any) -> None:
    """Before each try (retries included): is there time for its worst case?"""
    if _deadline.at is not None and time.monotonic() + ATTEMPT_SECONDS > _deadline.at:
        raise DeadlineReached(service=event_name.split(".")[1] if "." in event_name else "AWS")


def _bounded(client: Any) -> Any:
    client.meta.events.register("before-send", _check_deadline)
    return client


@cache
def dynamodb() -> Any:
    """The functions' DynamoDB client (bounded timeouts, a few short tries, none that would
    outlast the request)."""
    return _bounded(boto3.client("dynamodb", config=DYNAMODB_CONFIG))


@cache
def sqs() -> Any:
    """The functions' SQS client (one short try: a scheduled pass sends what it misses)."""
    return _bounded(boto3.client("sqs", config=SQS_CONFIG))


@cache
def events() -> Any:
    """The event relays' EventBridge client (bounded like DynamoDB's: what it misses, the
    scheduled relay puts on the bus later)."""
    return _bounded(boto3.client("events", config=DYNAMODB_CONFIG))


def reset() -> None:
    """Forget made clients and settings (tests switch endpoints between cases)."""
    dynamodb.cache_clear()
    sqs.cache_clear()
    events.cache_clear()
    settings.cache_clear()
