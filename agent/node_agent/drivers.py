"""How a node actually stops a workload: pluggable drivers.

Every driver answers ``terminated`` (stopped it now), ``gone`` (it was not running: a
redelivery after a crash, or someone else stopped it) or ``failed`` (try again later).
"""

from __future__ import annotations

import logging
import re
import shlex
import subprocess
from dataclasses import dataclass
from typing import Literal, Protocol

from reservations.models.messages import SpotTermination

Outcome = Literal["terminated", "gone", "failed"]
log = logging.getLogger("node_agent")

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


class LogDriver:
    """Pretends (for local runs): logs the stop; a second stop of one workload is ``gone``."""

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

    def __init__(
        self, command: str, timeout: float = 30.0, gone_pattern: str = DEFAULT_GONE_PATTERN
    ) -> None:
        self._command = command
        self._timeout = timeout
        self._gone = re.compile(gone_pattern, re.IGNORECASE)

    def argv(self, termination: SpotTermination) -> list[str]:
        # Substituted per argument after splitting: an id can never inject shell syntax.
        values = {
            "workloadId": termination.workload_id,
            "workloadKind": termination.workload_kind.value,
            "nodeId": termination.node_id,
            "terminationId": termination.termination_id,
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
