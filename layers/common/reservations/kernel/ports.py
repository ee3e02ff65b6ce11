"""What every use case may take from the world, whatever its feature: the clock, where new
ids and secrets come from, how a backoff waits, the key the service signs with. A slice's
own ports extend these with its stores and queues (``<slice>/ports.py``); the functions
wire the real ones, the tests their fakes."""

from __future__ import annotations

import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from reservations.kernel.settings import cursor_signing_key

Clock = Callable[[], datetime]


def _new_id() -> str:
    return str(uuid.uuid4())


def _new_secret() -> str:
    return secrets.token_urlsafe(32)


@dataclass(frozen=True, kw_only=True)
class Ports:
    """The clock, the id and secret sources, the backoff's sleep, and the service's signing
    key (read when first needed: a function that signs nothing never asks for it)."""

    clock: Clock
    new_id: Callable[[], str] = field(default=_new_id)
    new_secret: Callable[[], str] = field(default=_new_secret)
    sleep: Callable[[float], None] = field(default=time.sleep)
    signing_key: Callable[[], bytes] = field(default=cursor_signing_key)
