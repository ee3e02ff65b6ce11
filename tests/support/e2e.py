"""What the end-to-end tests share: the repo, local AWS settings, free ports, processes,
the AWS emulator as a process, the timings reported at the end of the run, and the steps of
a session (each command, how long it took, how it ended), printed with the stack's logs
when a test fails (``e2e_fixtures``)."""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

from devstack.net import free_port

ROOT = Path(__file__).resolve().parents[2]
LAMBDA_IMAGE = "reservations/lambda-python3.11:local"
REGION = "us-east-1"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local"}
DEMO_FLEET = ROOT / "fleets" / "demo.json"

# What the e2e run measured (name -> seconds), printed in pytest's terminal summary.
TIMINGS: dict[str, float] = {}
# What an end-to-end test counted (requests, checks), printed there too.
REPORTS: list[str] = []


@contextlib.contextmanager
def machine_wide(name: str) -> Iterator[None]:
    """One pytest worker at a time sets up what the machine shares (the others wait, then
    find it done)."""
    lock = ROOT / ".local" / f"e2e-{name}.lock"
    lock.parent.mkdir(exist_ok=True)
    with lock.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def sam_build_once() -> subprocess.CompletedProcess[str] | None:
    """`sam build --cached --parallel`, once per test run whatever its workers (None: built
    already). A build first empties .aws-sam/build, which a running stack reads: so it is
    made before any stack of the run starts, and the stacks skip their own
    (``RUN_SAM_BUILD=0``)."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID") or f"pid-{os.getpid()}"
    stamp = ROOT / ".local" / f"e2e-built-{run}"
    with machine_wide("sam-build"):
        if stamp.exists():
            return None
        result = subprocess.run(
            [sam_executable(), "build", "--cached", "--parallel"],
            cwd=ROOT,
            env=local_aws_environment(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode == 0:
            for earlier in stamp.parent.glob("e2e-built-*"):
                earlier.unlink()
            stamp.write_text("")
        return result


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def local_aws_environment(**extra: str) -> dict[str, str]:
    """The environment of every sam / emulator / make-run child: local credentials, no
    telemetry, no real AWS profile."""
    env = {key: value for key, value in os.environ.items() if key != "AWS_PROFILE"}
    env.update(CREDENTIALS)
    env.update(
        {"AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION, "SAM_CLI_TELEMETRY": "0"},
    )
    env.update(extra)
    return env


def sam_executable() -> str:
    return str(Path(sys.executable).with_name("sam"))


def stop_process_group(process: subprocess.Popen[Any], timeout: float = 30) -> None:
    """SIGINT the process's group (it was started in its own session), then SIGKILL."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGINT)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def as_in_a_terminal() -> None:
    """A child's ``preexec_fn``: SIGINT as a terminal's foreground job has it. A background
    job of a non-interactive shell (``make test &`` in a script) starts with SIGINT
    ignored, its children inherit that, and Python keeps an inherited SIG_IGN: the Ctrl-C a
    test sends would never arrive (the command line session's ``events tail --follow`` ran
    on 30 s after its Ctrl-C)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@dataclass
class Step:
    """One command of a session, as run: what, when (``time.time()``), how it ended."""

    command: str
    started: float
    ended: float | None = None
    outcome: str = "still running"

    def end(self, outcome: str, at: float | None = None) -> None:
        self.ended, self.outcome = time.time() if at is None else at, outcome

    def line(self, now: float) -> str:
        took = (self.ended or now) - self.started
        command = self.command if len(self.command) < 300 else self.command[:300] + " ..."
        return f"{took:6.1f} s  {self.outcome:<14} {command}"


class Steps:
    """The session steps of the test under way (cleared before each test), listed when it
    fails, with the stack's logs (``e2e_fixtures``), so that a failure says which command
    failed, after how long, and what the stack was doing."""

    def __init__(self) -> None:
        self.taken: list[Step] = []

    def start(self, command: str | Sequence[str]) -> Step:
        text = command if isinstance(command, str) else " ".join(map(str, command))
        step = Step(text.replace(str(Path(sys.executable).parent) + "/", ""), time.time())
        self.taken.append(step)
        return step

    def clear(self) -> None:
        self.taken.clear()

    def report(self, last: int = 12) -> str:
        now = time.time()
        shown = [step.line(now) for step in self.taken[-last:]]
        skipped = len(self.taken) - len(shown)
        return "\n".join(([f"({skipped} earlier steps)"] if skipped > 0 else []) + shown)


STEPS = Steps()
# A trace line of bash's `set -x` with the PS4 below: the nesting, when the command started.
TRACED = re.compile(r"^(\++) (\d+\.\d+) ", re.M)


def traced_steps(trace: str) -> list[Step]:
    """The commands of a session's bash trace, each with its start (one in a command
    substitution, which runs before the command it is in, marked ``+``); each ends where
    the next starts (the last one is left for the caller to end)."""
    marks = list(TRACED.finditer(trace))
    steps = [
        Step(
            "+" * (len(mark.group(1)) - 1)
            + " ".join(trace[mark.end() : after.start() if after else None].split()),
            float(mark.group(2)),
        )
        for mark, after in zip(marks, [*marks[1:], None], strict=True)
    ]
    for step, following in itertools.pairwise(steps):
        step.end("ok", following.started)
    return steps


def run_session(
    script: str, timeout: float, cwd: Path | None = None, env: dict[str, str] | None = None,
    strict: bool = True,
) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """A docs session's bash block (``-euo pipefail`` unless not ``strict``), output
    captured, in a session of its own: whatever it started in the background (a webhook
    receiver) is killed after it, also when it failed or timed out before its own
    ``kill``. Each of its commands is a step (:data:`STEPS`), from bash's trace (kept
    apart from its output), so a failure names the command, its time and its outcome."""
    with tempfile.TemporaryFile("w+") as trace:
        fd = trace.fileno()
        # PS4 is set in the script: bash run as root does not take it from the environment.
        prelude = f"BASH_XTRACEFD={fd}\nPS4='+ ${{EPOCHREALTIME}} '\nset -x\n"
        flags = ["-euo", "pipefail"] if strict else []
        process = subprocess.Popen(
            ["bash", *flags, "-c", prelude + script], cwd=cwd, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, start_new_session=True, pass_fds=(fd,),
            preexec_fn=as_in_a_terminal,
        )  # fmt: skip
        outcome = None
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            out, err = "", f"the session ran past {timeout:.0f} s"
            outcome = f"ran past {timeout:.0f} s"
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        trace.seek(0)
        steps = traced_steps(trace.read())
    if steps:
        steps[-1].end(outcome or f"exit {process.returncode}")
    STEPS.taken.extend(steps)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def tail(path: Path, characters: int = 4000) -> str:
    try:
        return path.read_text(errors="replace")[-characters:]
    except OSError:
        return f"({path} not readable)"


@dataclass
class Emulator:
    """The AWS emulator (moto server) running as a process on ``port``."""

    port: int
    process: subprocess.Popen[str]
    log: Path

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def client(self, service: str) -> Any:
        return boto3.client(
            service,
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        )

    def load_fleet(self, fleet: Path) -> None:
        """Reload a fleet file, as a person would (the documented loader command)."""
        result = subprocess.run(
            [
                *(sys.executable, "-m", "reservations_tools.fleet.loader", "load", str(fleet)),
                *("--endpoint-url", self.endpoint),
            ],
            cwd=ROOT,
            env=local_aws_environment(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr


@contextlib.contextmanager
def running_emulator(fleet: Path, log: Path, timeout: float = 60) -> Iterator[Emulator]:
    port = free_port()
    with log.open("w") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "devstack.emulator", "--port", str(port), "--fleet", str(fleet)],
            cwd=ROOT,
            env=local_aws_environment(),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
    emulator = Emulator(port, process, log)
    try:
        deadline = time.monotonic() + timeout
        while "AWS emulator ready" not in tail(log, 100_000):
            if process.poll() is not None:
                pytest.fail(f"the AWS emulator exited ({process.returncode}):\n{tail(log)}")
            if time.monotonic() > deadline:
                pytest.fail(f"the AWS emulator was not ready within {timeout:.0f} s:\n{tail(log)}")
            time.sleep(0.2)
        yield emulator
    finally:
        stop_process_group(process, timeout=15)


def sam_env_vars(emulator_port: int, directory: Path) -> Path:
    """events/env.json with the emulator's port (SAM's --env-vars file)."""
    overrides = json.loads((ROOT / "events" / "env.json").read_text())
    overrides["Parameters"]["AWS_ENDPOINT_URL"] = f"http://host.docker.internal:{emulator_port}"
    path = directory / "env.json"
    path.write_text(json.dumps(overrides, indent=2))
    return path
