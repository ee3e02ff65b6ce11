"""What the end-to-end tests share: the repo, local AWS settings, free ports, processes,
the AWS emulator as a process, and the timings reported at the end of the run."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
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


def run_session(
    script: str, timeout: float, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """A docs session's bash block (``-euo pipefail``), output captured, in a session of
    its own: whatever it started in the background (a webhook receiver) is killed after it,
    also when it failed or timed out before its own ``kill``."""
    process = subprocess.Popen(
        ["bash", "-euo", "pipefail", "-c", script], cwd=cwd, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        out, err = "", f"the session ran past {timeout:.0f} s"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
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
