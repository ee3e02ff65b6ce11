"""What the node agent's tests share: terminations, a clock that does not sleep, and the
domains of libvirt's built-in test driver."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from node_agent.drivers import Clock
from termination_messages import SpotTermination


def termination(workload_id: str = "vm-1", kind: str = "vm", node_id: str = "node-a") -> Any:
    return SpotTermination.model_validate(
        {
            "terminationId": f"t-{uuid.uuid4()}",
            "nodeId": node_id,
            "workloadId": workload_id,
            "workloadKind": kind,
            "unitIds": ["0000:04:00.0"],
            "reservationId": "res-1",
            "requestedAt": "2026-11-29T00:00:00Z",
        }
    )


class FakeClock:
    """Time moves only when a driver sleeps; ``on_sleep`` runs at every sleep."""

    def __init__(self, on_sleep: Callable[[], None] = lambda: None) -> None:
        self.now = 1000.0
        self.slept: list[float] = []
        self.on_sleep = on_sleep

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
        self.on_sleep()

    def clock(self) -> Clock:
        return Clock(monotonic=self.monotonic, sleep=self.sleep)


def domain_xml(name: str, on_poweroff: str = "destroy") -> str:
    """A test-driver domain. ``on_poweroff`` is what the test driver does when the guest is
    asked to shut down: ``destroy`` powers it off at once (a guest that honours ACPI);
    ``restart`` leaves it running (a guest that ignores the request)."""
    return (
        f"<domain type='test'><name>{name}</name><memory>8192</memory><vcpu>1</vcpu>"
        f"<os><type>hvm</type></os><on_poweroff>{on_poweroff}</on_poweroff></domain>"
    )
