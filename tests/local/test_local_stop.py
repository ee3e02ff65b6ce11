"""How ``make run`` stops (Ctrl-C): the emulator outlives the processes that call it, and a
process that ignores SIGTERM is killed after its grace and named; each process is timed on
its own; the pump and the node consumers stop at once, whatever their loops are waiting for.

Stopped all at once, the node side's calls to an emulator already gone were retried with
backoff, and the stack took 14 s to stop on an idle machine (over 30 s on a loaded one).
Then the pump and the consumers waited for their long polls, and for Python's teardown, and
each ``sam local`` removed its two dozen containers one after another: 15.6 s."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any

import docker.errors
import pytest

from devstack import run, sam_cli
from devstack.consumers import Consumers, Receiving
from devstack.containers import (
    LOCAL_PROCESS_ENV,
    LOCAL_PROCESS_LABEL,
    LOCAL_STACK_ENV,
    LOCAL_STACK_LABEL,
)
from devstack.emulator import LOCAL_CREDENTIALS
from devstack.net import free_port
from node_agent.consumer import Consumer
from node_agent.drivers import LogDriver
from tests.agent.support import termination

# Each stand-in notes when SIGTERM reached it, then takes ``linger`` seconds to exit; the
# trailing ``-m <module>`` is what the stack reads to tell its processes apart.
STAND_IN = """
import signal, sys, time
out, name, linger = sys.argv[1], sys.argv[2], float(sys.argv[3])
def on_term(*_):
    with open(out, "a") as f:
        f.write(f"{name} {time.monotonic()}\\n")
    time.sleep(linger)
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term if linger >= 0 else signal.SIG_IGN)
open(out + "." + name, "w").close()
while True:
    time.sleep(0.05)
"""


def stand_in(tmp_path: Path, name: str, module: str, linger: float) -> subprocess.Popen[str]:
    out = tmp_path / "terms"
    process = subprocess.Popen(
        [sys.executable, "-c", STAND_IN, str(out), name, str(linger), "-m", module],
        start_new_session=True,
        text=True,
    )
    deadline = time.monotonic() + 10
    while not (tmp_path / f"terms.{name}").exists():  # its handler is in place
        assert time.monotonic() < deadline, f"{name} did not start"
        time.sleep(0.02)
    return process


def sigterms(tmp_path: Path) -> dict[str, float]:
    lines = (tmp_path / "terms").read_text().split()
    return dict(zip(lines[::2], map(float, lines[1::2]), strict=True))


def test_the_emulator_is_stopped_after_everything_that_calls_it(tmp_path: Path) -> None:
    emulator = stand_in(tmp_path, "emulator", "devstack.emulator", 0)
    api = stand_in(tmp_path, "api", "devstack.sam_cli", 0.3)
    consumers = stand_in(tmp_path, "consumers", "devstack.consumers", 0.6)

    run.stop([emulator, api, consumers])

    assert [p.returncode for p in (emulator, api, consumers)] == [0, 0, 0]
    at = sigterms(tmp_path)
    assert abs(at["api"] - at["consumers"]) < 0.5, "the clients and sam local stop together"
    assert at["emulator"] >= at["consumers"] + 0.6, "the emulator got SIGTERM while called"


def test_a_process_ignoring_sigterm_is_killed_after_its_grace_and_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stubborn = stand_in(tmp_path, "pump", "devstack.pump", -1)
    started = time.monotonic()

    run.stop_together([stubborn], grace=1)

    assert stubborn.returncode == -9
    assert 1 <= time.monotonic() - started < 5
    assert capsys.readouterr().out.splitlines() == [
        "make run: devstack.pump still running 1 s after SIGTERM: killed"
    ]


def test_a_component_is_named_by_what_it_runs() -> None:
    sam = subprocess.Popen([sys.executable, "-c", "", "-m", "devstack.sam_cli", "local", "x"])
    plain = subprocess.Popen([sys.executable, "-c", ""])
    sam.wait()
    plain.wait()
    assert run.component(sam) == "devstack.sam_cli local x"
    assert run.module(plain) == ""


def test_each_process_is_timed_on_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Waited for one after another, a quick process listed after a slow one was reported
    with the slow one's time: the Ctrl-C test named every process as slow."""
    monkeypatch.setattr(run, "SLOW_STOP_SECONDS", 0.5)
    slow = stand_in(tmp_path, "slow", "devstack.sam_cli", 1.0)
    quick = stand_in(tmp_path, "quick", "devstack.pump", 0)

    run.stop_together([slow, quick])

    named = capsys.readouterr().out.splitlines()
    assert len(named) == 1, named
    assert named[0].startswith("make run: devstack.sam_cli stopped 1.")


def caught(pid: int, signum: int) -> bool:
    """Whether the process has a handler of its own for the signal (/proc's SigCgt)."""
    status = Path(f"/proc/{pid}/status").read_text()
    mask = int(re.search(r"^SigCgt:\s*([0-9a-f]+)$", status, re.M).group(1), 16)  # type: ignore[union-attr]
    return bool(mask >> (signum - 1) & 1)


def test_the_pump_stopped_while_it_waits_for_sam_local_exits_at_once(
    emulator: str, emulated: dict[str, Any]
) -> None:
    """Ctrl-C before `sam local start-lambda` listened: the pump waited for its port as
    long as it took (forever: sam local was stopping too), and was killed after 15 s. (The
    emulator provisioned for it: an in-memory test before it in this worker may have reset
    the backends the emulator shares, and the pump starts by finding its queues.)"""
    nobody = f"http://127.0.0.1:{free_port()}"
    pump = subprocess.Popen(
        [sys.executable, "-m", "devstack.pump", "--emulator", emulator,
         "--lambda-endpoint", nobody, "--sender-endpoint", nobody],
        env={**os.environ, **LOCAL_CREDENTIALS, "AWS_DEFAULT_REGION": "us-east-1"},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not caught(pump.pid, signal.SIGTERM):  # its handler is in place: it waits
        assert pump.poll() is None, pump.communicate()[0]
        assert time.monotonic() < deadline, "the pump did not set its handler"
        time.sleep(0.05)

    pump.send_signal(signal.SIGTERM)
    try:
        out, _ = pump.communicate(timeout=5)
    finally:
        pump.kill()
    assert pump.returncode == 0, out


class Queue:
    """A node queue's client: one message, then a long poll that ends only when told."""

    def __init__(self, *messages: dict[str, Any]) -> None:
        self.messages = list(messages)
        self.polled = threading.Event()
        self.end_poll = threading.Event()
        self.reported: list[str] = []

    def receive_message(self, **_: Any) -> dict[str, Any]:
        if self.messages:
            return {"Messages": [self.messages.pop(0)]}
        self.polled.set()
        self.end_poll.wait()
        return {}

    def send_message(self, **request: Any) -> None:
        self.reported.append(request["MessageBody"])

    def delete_message(self, **_: Any) -> None:
        pass


def consumer(queue: Queue, checkpoint: Any = lambda _step: None) -> Consumer:
    return Consumer(Receiving(queue), "node-a", "q", "reports", LogDriver(), checkpoint=checkpoint)


def test_the_consumers_do_not_wait_for_a_long_poll_to_end(tmp_path: Path) -> None:
    """A receive cannot be cut short (5 s on the local queues): joined, each consumer in
    one made the process's stop wait for it."""
    queue = Queue()
    consumers = Consumers(lambda _node: consumer(queue))
    consumers.start_new({"node-a"})
    assert queue.polled.wait(5)

    consumers.stop()
    joined = threading.Thread(target=consumers.join, daemon=True)
    joined.start()
    joined.join(timeout=1)

    assert not joined.is_alive(), "the process's stop waited for the long poll"
    queue.end_poll.set()


def test_the_consumers_finish_the_message_in_hand(tmp_path: Path) -> None:
    message = {"MessageId": "m-1", "ReceiptHandle": "r-1", "Body": termination("vm-1").to_json()}
    queue = Queue(message)
    in_hand = threading.Event()

    def slow_stop(step: str) -> None:
        if step == "stopped":
            in_hand.set()
            time.sleep(0.5)  # the report is still to be sent

    consumers = Consumers(lambda _node: consumer(queue, slow_stop))
    consumers.start_new({"node-a"})
    assert in_hand.wait(5)
    consumers.stop()
    consumers.join()

    assert len(queue.reported) == 1  # reported before the process went
    queue.end_poll.set()


class Docker:
    """A container collection whose removals take ``seconds`` each; one is gone already."""

    def __init__(self, seconds: float, gone: str = "") -> None:
        self.seconds, self.gone = seconds, gone
        self.removed: list[str] = []
        self.client = self
        self.api = self

    def remove_container(self, container_id: str, force: bool) -> None:
        assert force
        if container_id == self.gone:
            raise docker.errors.NotFound("no such container")
        time.sleep(self.seconds)
        self.removed.append(container_id)


def test_sam_local_removes_its_containers_at_once() -> None:
    """One after another, as SAM removes them, the API's two dozen took 6 s and more."""
    collection = Docker(0.3, gone="c-0")
    started = time.monotonic()

    sam_cli.remove_at_once({f"c-{n}": collection for n in range(8)})

    assert time.monotonic() - started < 1.2  # 2.1 s one after another
    assert sorted(collection.removed) == [f"c-{n}" for n in range(1, 8)]


def test_the_containers_sam_local_makes_are_labelled_and_noted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[dict[str, Any]] = []

    def create(self: Any, image: str, command: Any = None, **options: Any) -> Any:
        made.append(options)
        return types.SimpleNamespace(id=f"c-{len(made)}")

    monkeypatch.setattr(sam_cli, "_create", create)
    monkeypatch.setattr(sam_cli, "MADE", sam_cli.Made())
    monkeypatch.setenv(LOCAL_STACK_ENV, "stack-1")
    collection = object()

    sam_cli.creating(host_network=False)(collection, "image", labels={"sam": "x"})
    monkeypatch.setenv(LOCAL_PROCESS_ENV, "triggered-1")  # a supervisor's start-lambda
    sam_cli.creating(host_network=False)(collection, "image")
    monkeypatch.delenv(LOCAL_STACK_ENV)
    monkeypatch.delenv(LOCAL_PROCESS_ENV)
    sam_cli.creating(host_network=False)(collection, "image")

    assert [options.get("labels") for options in made] == [
        {"sam": "x", LOCAL_STACK_LABEL: "stack-1"},
        {LOCAL_STACK_LABEL: "stack-1", LOCAL_PROCESS_LABEL: "triggered-1"},
        None,
    ]
    assert sam_cli.MADE.take() == {"c-1": collection, "c-2": collection, "c-3": collection}
