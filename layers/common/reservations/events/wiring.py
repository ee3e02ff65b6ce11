"""The events slice's real ports: the feeds' reads need only the clock (the event table is
the function's own)."""

from __future__ import annotations

from reservations.kernel.clock import utc_now
from reservations.kernel.ports import Ports


def event_ports() -> Ports:
    return Ports(clock=utc_now)
