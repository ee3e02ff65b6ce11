"""The local stack for the soak: ``make run`` as the end-to-end tests start it (free ports,
its own directory, a fleet of keys), but with ``RUN_NODE_SIDE=0`` and ``RUN_START_LAMBDA=0``,
so that the pump, the node consumers and the two ``sam local start-lambda`` (the triggered
functions' and the webhook sender's) are the soak's own processes, which it kills with
SIGKILL and starts again (``Supervisor``); and with ``FUNCTIONS_EMULATOR_PORT`` on the
soak's fault-injecting proxy (``devstack.fault_proxy``), through which the functions and
the pump reach the emulator, so that the soak can slow it down or make it refuse. The soak's
own reads (the bus it follows, the feeds it audits) go to the emulator directly."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devstack.containers import LOCAL_PROCESS_ENV, LOCAL_STACK_ENV, stack_containers
from devstack.emulator import LOCAL_CREDENTIALS, REGION
from devstack.net import free_port, wait_for_port
from devstack.run import ROOT, SUPERVISED_FILE

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
    env.update(AWS_DEFAULT_REGION=REGION, AWS_REGION=REGION, SAM_CLI_TELEMETRY="0")
    env.update(extra)  # a process's own (make run's sam local: the same and more)
    return env


@dataclass(frozen=True)
class Command:
    """A process the soak supervises: its command line, what it needs in its environment
    besides ``environment()``, and the port it answers on once ready (None: none)."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    port: int | None = None

    @classmethod
    def of(cls, written: dict[str, Any]) -> Command:
        """As make run writes it (``devstack.run.Supervised``)."""
        return cls(list(written["command"]), dict(written.get("env") or {}), written.get("port"))


@dataclass
class Stack:
    process: subprocess.Popen[str]
    api: str
    emulator: str
    directory: Path
    label: str
    proxy: EmulatorProxy
    supervised: dict[str, Command] = field(default_factory=dict)

    @property
    def lambda_endpoint(self) -> str:
        pump = self.supervised["pump"].argv
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
    """The fault proxy, then ``python -m devstack.run`` with ``fleet``, until its ready line
    (or its exit)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "fleet.json").write_text(json.dumps(fleet, indent=2))
    api_port, emulator_port = free_port(), free_port()
    proxy = EmulatorProxy.start(emulator_port, directory / "fault-proxy.log")
    label = f"soak-{uuid.uuid4().hex}"
    env = environment(
        API_PORT=str(api_port),
        AWS_EMULATOR_PORT=str(emulator_port),
        FUNCTIONS_EMULATOR_PORT=str(proxy.port),
        FLEET=str(directory / "fleet.json"),
        LOCAL_DIR=str(directory / "local"),
        RUN_NODE_SIDE="0",
        RUN_START_LAMBDA="0",
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
    stack = Stack(process, "", f"http://127.0.0.1:{emulator_port}", directory, label, proxy)
    try:
        stack.api = _wait_until_ready(process, directory / "make-run.log")
    except BaseException:
        proxy.stop()
        raise
    written = json.loads((directory / "local" / SUPERVISED_FILE).read_text())
    stack.supervised = {name: Command.of(one) for name, one in written.items()}
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
    stack.proxy.stop()
    remove_containers(stack.label)  # this stack's own, never another's


def remove_containers(stack: str, process: str | None = None) -> int:
    """The stack's Lambda containers (only those of one ``sam local`` process, given it)
    removed, whatever their state; how many."""
    leftovers = stack_containers(stack, process)
    if leftovers:
        subprocess.run(["docker", "rm", "-f", *leftovers], capture_output=True, check=False)
    return len(leftovers)


class EmulatorProxy:
    """The fault proxy in front of the emulator (``devstack.fault_proxy``), a process of the
    soak's own, told what to do on its stdin; its log is its answers."""

    def __init__(self, process: subprocess.Popen[str], port: int) -> None:
        self.process, self.port = process, port
        self.lock = threading.Lock()

    @classmethod
    def start(cls, emulator_port: int, log: Path) -> EmulatorProxy:
        port = free_port()
        command = [sys.executable, "-m", "devstack.fault_proxy"]
        process = subprocess.Popen(
            [*command, "--port", str(port), "--to", str(emulator_port)],
            cwd=ROOT,
            env=environment(),
            stdin=subprocess.PIPE,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        if not wait_for_port(port, 60, alive=lambda: process.poll() is None):
            raise SystemExit(f"make soak: the fault proxy did not start; see {log}")
        return cls(process, port)

    def tell(self, line: str) -> None:
        """One command (``slow 1.5 20``, ``refuse 10 reset``, ``refuse 10 503``)."""
        with self.lock:
            if self.process.stdin is None or self.process.poll() is not None:
                raise RuntimeError("the fault proxy is not running")
            self.process.stdin.write(f"{line}\n")
            self.process.stdin.flush()

    def stop(self) -> None:
        """Its stdin closed: it stops (SIGKILL if it has not within 10 s)."""
        with self.lock, contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Supervisor:
    """The processes make run left to the soak (the two ``sam local start-lambda``, the pump,
    the consumers), as the soak runs them: started (one with a port: until it answers
    there), killed (SIGKILL to its process group: no chance to finish what it holds; a
    ``sam local``'s containers, which it cannot remove any more, are removed then) and
    started again with the same command line, on the same port. One that ends by itself is
    noted in ``exits`` and started again (``revive``). Each log is ``<name>.log`` in
    ``logs``."""

    START_TRIES = 3  # a process that exits before it answers is started again, twice

    def __init__(
        self,
        commands: dict[str, Command],
        logs: Path,
        stack: str,
        remove: Callable[[str, str], int] = remove_containers,
    ) -> None:
        self.commands, self.logs, self.stack, self.remove = commands, logs, stack, remove
        for name in commands:  # this run's logs only (a seed's directory is used again)
            (logs / f"{name}.log").write_text("")
        self.running: dict[str, subprocess.Popen[str]] = {}
        self.labels: dict[str, str] = {}  # name -> the process id its containers carry
        self.exits: Counter[str] = Counter()  # the processes that ended by themselves
        self.lock = threading.Lock()
        # One start, kill or revival of a process at a time.
        self.turns = {name: threading.RLock() for name in commands}

    def start(self, name: str) -> None:
        """Started (unless it runs); once it answers on its port, if it has one (as long as
        it runs)."""
        with self.turns[name]:
            if self.alive(name):
                return
            self._start(name)

    def alive(self, name: str) -> bool:
        with self.lock:
            process = self.running.get(name)
        return process is not None and process.poll() is None

    def _start(self, name: str) -> None:
        command = self.commands[name]
        for _ in range(self.START_TRIES):
            process = self._spawn(name, command)
            if command.port is None or wait_for_port(
                command.port, timeout=float("inf"), alive=lambda p=process: p.poll() is None
            ):
                return
            self._forget(name)
        raise RuntimeError(f"{name} exited {self.START_TRIES} times before it answered")

    def _spawn(self, name: str, command: Command) -> subprocess.Popen[str]:
        label = f"{name}-{uuid.uuid4().hex[:12]}"
        with (self.logs / f"{name}.log").open("a") as log:
            process = subprocess.Popen(
                command.argv,
                cwd=ROOT,
                env=environment(**command.env, **{LOCAL_PROCESS_ENV: label}),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
        with self.lock:
            self.running[name], self.labels[name] = process, label
        return process

    def _forget(self, name: str) -> None:
        """A process that is gone: what is left of its group killed, its containers
        removed, if it made any."""
        with self.lock:
            process = self.running.pop(name, None)
            label = self.labels.pop(name, None)
        if process is not None:
            process.wait()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        if label is not None and self.commands[name].port is not None:
            self.remove(self.stack, label)

    def kill(self, name: str) -> None:
        """SIGKILL to its process group, then what it left removed."""
        with self.turns[name]:
            with self.lock:
                process = self.running.get(name)
            if process is None:
                raise RuntimeError(f"{name} is not running: nothing to kill")
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            self._forget(name)

    def revive(self) -> list[str]:
        """Each process that ended by itself (not killed here), noted in ``exits`` and
        started again; their names. One being started or killed now is left to that."""
        revived = []
        for name in list(self.running):
            turn = self.turns[name]
            if not turn.acquire(blocking=False):
                continue
            try:
                with self.lock:
                    process = self.running.get(name)
                if process is None or process.poll() is None:
                    continue
                self.exits[name] += 1
                self._forget(name)
                self._start(name)
                revived.append(name)
            finally:
                turn.release()
        return revived

    def start_all(self) -> None:
        """Each one not running, in make run's order (the sam local first: the pump waits
        for them)."""
        for name in self.commands:
            if name not in self.running:
                self.start(name)

    def stop_all(self) -> None:
        """SIGTERM to each group (a ``sam local`` removes its containers then), SIGKILL
        after 15 s."""
        with self.lock:
            running = dict(self.running)
        for process in running.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for name, process in running.items():
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
            self._forget(name)
