"""The local stack for the soak: ``make run`` as the end-to-end tests start it (free ports,
its own directory, a fleet of keys), but with ``RUN_NODE_SIDE=0``, so that the pump and the
node consumers are the soak's own processes, which it kills with SIGKILL and starts again."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from devstack.containers import LOCAL_STACK_ENV, stack_containers
from devstack.emulator import LOCAL_CREDENTIALS, REGION
from devstack.net import free_port
from devstack.run import NODE_SIDE_FILE, ROOT

READY = re.compile(r"make run: ready in (\d+) s\. API: (http://\S+)")
READY_TIMEOUT = 900  # a fresh checkout builds everything first


def docker_unavailable() -> str | None:
    """Why Docker cannot be had now (None: it answers)."""
    try:
        result = subprocess.run(
            ["docker", "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"docker did not answer ({error})"
    return None if result.returncode == 0 else f"docker info failed: {result.stderr.strip()}"


def local_credentials() -> dict[str, str]:
    """The emulator's credentials as a boto3 client takes them."""
    return {
        "aws_access_key_id": LOCAL_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": LOCAL_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    }


def environment(**extra: str) -> dict[str, str]:
    """Local credentials and region, no real AWS profile, no telemetry."""
    env = {k: v for k, v in os.environ.items() if k != "AWS_PROFILE"}
    env.update(LOCAL_CREDENTIALS)
    env.update(AWS_DEFAULT_REGION=REGION, AWS_REGION=REGION, SAM_CLI_TELEMETRY="0", **extra)
    return env


@dataclass
class Stack:
    process: subprocess.Popen[str]
    api: str
    emulator: str
    directory: Path
    label: str
    node_side: dict[str, list[str]] = field(default_factory=dict)

    @property
    def lambda_endpoint(self) -> str:
        pump = self.node_side["pump"]
        return pump[pump.index("--lambda-endpoint") + 1]

    def lambda_client(self) -> Any:
        """``sam local start-lambda``'s, for the functions AWS triggers (as the pump's)."""
        import boto3
        from botocore.config import Config

        config = Config(read_timeout=120, retries={"max_attempts": 1})
        return boto3.client(
            "lambda",
            endpoint_url=self.lambda_endpoint,
            region_name=REGION,
            config=config,
            **local_credentials(),
        )

    def aws(self, service: str) -> Any:
        import boto3

        return boto3.client(
            service, endpoint_url=self.emulator, region_name=REGION, **local_credentials()
        )


def start_stack(directory: Path, fleet: dict[str, Any]) -> Stack:
    """``python -m devstack.run`` with ``fleet``, until its ready line (or its exit)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "fleet.json").write_text(json.dumps(fleet, indent=2))
    api_port, emulator_port = free_port(), free_port()
    label = f"soak-{uuid.uuid4().hex}"
    env = environment(
        API_PORT=str(api_port),
        AWS_EMULATOR_PORT=str(emulator_port),
        FLEET=str(directory / "fleet.json"),
        LOCAL_DIR=str(directory / "local"),
        RUN_NODE_SIDE="0",
        **{LOCAL_STACK_ENV: label},
    )
    out = (directory / "make-run.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "devstack.run"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=out,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    stack = Stack(process, "", f"http://127.0.0.1:{emulator_port}", directory, label)
    stack.api = _wait_until_ready(process, directory / "make-run.log")
    stack.node_side = json.loads((directory / "local" / NODE_SIDE_FILE).read_text())
    return stack


def _wait_until_ready(process: subprocess.Popen[str], log: Path) -> str:
    started = time.monotonic()
    while not (ready := READY.search(log.read_text(errors="replace"))):
        if process.poll() is not None:
            raise SystemExit(f"make soak: make run exited ({process.returncode}); see {log}")
        if time.monotonic() - started > READY_TIMEOUT:
            stop_stack_process(process)
            raise SystemExit(f"make soak: make run not ready in {READY_TIMEOUT} s; see {log}")
        time.sleep(1)
    return ready.group(2)


def stop_stack_process(process: subprocess.Popen[str]) -> None:
    """Ctrl-C to make run's group, as a person would; SIGKILL after a minute."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGINT)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def stop_stack(stack: Stack) -> None:
    stop_stack_process(stack.process)
    leftovers = stack_containers(stack.label)  # this stack's own, never another's
    if leftovers:
        subprocess.run(["docker", "rm", "-f", *leftovers], capture_output=True, check=False)


class NodeSide:
    """The pump and the consumers, as the soak runs them: started, killed (SIGKILL, no
    chance to finish what they hold) and started again."""

    def __init__(self, commands: dict[str, list[str]], log: Path) -> None:
        self.commands = commands
        self.log: IO[str] = log.open("a")
        self.running: dict[str, subprocess.Popen[str]] = {}

    def start(self, name: str) -> None:
        self.running[name] = subprocess.Popen(
            self.commands[name],
            cwd=ROOT,
            env=environment(),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )

    def kill(self, name: str) -> None:
        process = self.running.pop(name)
        process.send_signal(signal.SIGKILL)
        process.wait()

    def start_all(self) -> None:
        for name in self.commands:
            if name not in self.running:
                self.start(name)

    def stop_all(self) -> None:
        for process in self.running.values():
            process.send_signal(signal.SIGTERM)
        for process in self.running.values():
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.running.clear()
