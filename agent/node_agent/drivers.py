"""How a node actually stops a workload: pluggable drivers.

Every driver answers ``terminated`` (stopped it now), ``gone`` (it was not running: a
redelivery after a crash, or someone else stopped it) or ``failed`` (try again later).
``gone`` frees the workload's units, so a driver says it only when it knows the workload is
not running; anything it cannot be sure of is ``failed``.

A driver stops the workload kinds it names in ``kinds`` (``log`` and ``command`` stop any);
:class:`Drivers` picks the one for each message's kind. The libvirt and Kubernetes drivers
live in their own modules, so their client libraries are needed only where they are used.
"""

from __future__ import annotations

import logging
import math
import re
import shlex
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from termination_messages import Outcome, SpotTermination, WorkloadKind

log = logging.getLogger("node_agent")

ALL_KINDS = frozenset(WorkloadKind)

# What virsh and kubectl say when the domain or pod does not exist, and nothing broader:
# "gone" frees the units, so an error that merely says "not found" about something else
# (a kubectl context, a config file) must stay "failed" while the workload may still run.
DEFAULT_GONE_PATTERN = (
    r"failed to get domain|domain not found|no domain with matching"
    r'|\(NotFound\)|pods? "[^"]*" not found'
)


@dataclass(frozen=True)
class Result:
    outcome: Outcome
    detail: str | None = None


class Driver(Protocol):
    def stop(self, termination: SpotTermination) -> Result: ...


def kinds_of(driver: Driver) -> frozenset[WorkloadKind]:
    """The workload kinds a driver stops: all of them unless it names some."""
    kinds: frozenset[WorkloadKind] = getattr(driver, "kinds", ALL_KINDS)
    return kinds


def name_of(driver: Driver) -> str:
    """The driver's name in logs and metrics."""
    return str(getattr(driver, "name", type(driver).__name__))


class Drivers:
    """The drivers of one node, at most one per workload kind."""

    def __init__(self, drivers: Sequence[Driver]) -> None:
        self._by_kind: dict[WorkloadKind, Driver] = {}
        for driver in drivers:
            for kind in kinds_of(driver):
                if kind in self._by_kind:
                    taken = name_of(self._by_kind[kind])
                    raise ValueError(f"{kind}s would have two drivers: {taken}, {name_of(driver)}")
                self._by_kind[kind] = driver

    def names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(name_of(driver) for driver in self._by_kind.values()))

    def for_kind(self, kind: WorkloadKind) -> Driver | None:
        return self._by_kind.get(kind)

    def stop(self, termination: SpotTermination) -> Result:
        driver = self.for_kind(termination.workload_kind)
        if driver is None:
            return unhandled(termination)
        return driver.stop(termination)


def unhandled(termination: SpotTermination) -> Result:
    """No driver of this node stops this kind: it may run, so it is not ``gone``."""
    kind = termination.workload_kind.value
    return Result("failed", f"no driver on this node stops {kind}s ({termination.workload_id})")


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Clock:
    """Time for the drivers that wait, a parameter so tests need not sleep; ``now`` is the
    wall clock a message's ``terminateAt`` is compared with."""

    monotonic: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    now: Callable[[], datetime] = _utc_now

    def seconds_left(self, termination: SpotTermination) -> float:
        """Seconds until the message's ``terminateAt`` (0 once it passed)."""
        return seconds_left(termination, self.now())


def seconds_left(termination: SpotTermination, now: datetime) -> float:
    """Seconds from ``now`` until the message's deadline; 0 once it passed, and 0 for a
    message without ``terminateAt`` (an older sender: stop now)."""
    if termination.terminate_at is None:
        return 0.0
    return max((termination.terminate_at - now).total_seconds(), 0.0)


def lead_seconds(driver: object, termination: SpotTermination) -> float:
    """How long before the message's deadline the driver starts its stop: its own
    ``lead_seconds`` when it has one, else 0 (it stops the workload at the deadline)."""
    lead: Callable[[SpotTermination], float] | None = getattr(driver, "lead_seconds", None)
    return lead(termination) if lead is not None else 0.0


def clamped_grace(grace: float, termination: SpotTermination) -> float:
    """The agent's grace, clamped to the notice the reclaim gave: without a notice there is
    no grace (the spot tier's contract); a message without ``terminateAt`` (an older
    sender) keeps the whole grace, as agents always gave it."""
    if termination.terminate_at is None:
        return grace
    return min(grace, termination.notice_seconds)


def poll_until(done: Callable[[], bool], seconds: float, clock: Clock, every: float) -> bool:
    """Ask ``done`` until it says yes or ``seconds`` have passed; whether it said yes."""
    deadline = clock.monotonic() + seconds
    while not done():
        left = deadline - clock.monotonic()
        if left <= 0:
            return False
        clock.sleep(min(every, left))
    return True


class LogDriver:
    """Pretends (for local runs): logs the stop; a second stop of one workload is ``gone``."""

    name = "log"
    kinds = ALL_KINDS

    def __init__(self) -> None:
        self._stopped: set[str] = set()

    def stop(self, termination: SpotTermination) -> Result:
        key = f"{termination.workload_kind.value}:{termination.workload_id}"
        if key in self._stopped:
            return Result("gone", f"{key} already stopped")
        self._stopped.add(key)
        log.info("pretending to stop %s on units %s", key, ",".join(termination.unit_ids))
        return Result("terminated", f"log driver stopped {key}")


class CommandDriver:
    """Runs a command such as ``virsh destroy {workloadId}`` or
    ``kubectl delete pod {workloadId}``, with a timeout; "no such domain/pod" is ``gone``."""

    name = "command"
    kinds = ALL_KINDS

    def __init__(
        self,
        command: str,
        timeout: float = 30.0,
        gone_pattern: str = DEFAULT_GONE_PATTERN,
        grace_seconds: int = 0,
        clock: Clock | None = None,
    ) -> None:
        self._command = command
        self._timeout = timeout
        self._gone = re.compile(gone_pattern, re.IGNORECASE)
        self._grace = grace_seconds
        self._clock = clock or Clock()

    def lead_seconds(self, termination: SpotTermination) -> float:
        """The command runs its grace (clamped to the notice) before the deadline."""
        return clamped_grace(self._grace, termination)

    def grace_seconds(self, termination: SpotTermination) -> int:
        """``{graceSeconds}``: the seconds left until the deadline, at most the grace (the
        whole grace for a message without ``terminateAt``)."""
        if termination.terminate_at is None:
            return self._grace
        return min(self._grace, math.ceil(self._clock.seconds_left(termination)))

    def argv(self, termination: SpotTermination) -> list[str]:
        # Substituted per argument after splitting: an id can never inject shell syntax.
        values = {
            "workloadId": termination.workload_id,
            "workloadKind": termination.workload_kind.value,
            "nodeId": termination.node_id,
            "terminationId": termination.termination_id,
            "graceSeconds": str(self.grace_seconds(termination)),
        }
        return [part.format(**values) for part in shlex.split(self._command)]

    def stop(self, termination: SpotTermination) -> Result:
        argv = self.argv(termination)
        try:
            done = subprocess.run(  # noqa: S603 - argv from the operator's own configuration
                argv, capture_output=True, text=True, timeout=self._timeout, check=False
            )
        except subprocess.TimeoutExpired:
            return Result("failed", f"{argv[0]} timed out after {self._timeout:g} s")
        except OSError as error:
            return Result("failed", f"{argv[0]}: {error.strerror}")
        output = (done.stdout + done.stderr).strip()[-500:]
        if done.returncode == 0:
            return Result("terminated", output or None)
        if self._gone.search(output):
            return Result("gone", output)
        return Result("failed", f"exit {done.returncode}: {output}")
