"""The ``reservations`` command line against `make run` (the demo fleet, its node agents),
as a broker tries it: the units, a reclaim's dry run, the reclaim, the events tailed as they
land, and webhooks forwarded by ``webhooks listen`` to a receiver on 127.0.0.1 that verifies
each with ``verify_webhook``; an error's exit status and lines; Ctrl-C ends the waits with 0.

Each command runs as the installed console script, in its own process. The rest of the
commands and their outputs are tested in process (tests/client/test_cli.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any

import pytest

from reservations_client import verify_webhook
from tests.support.api_tools import KEYS
from tests.support.e2e import ROOT, STEPS, TIMINGS, as_in_a_terminal
from tests.support.stack import Stack, run_stack

pytestmark = pytest.mark.e2e
A1, RES = "node-a1", "res-a-active"
COMMAND = str(Path(sys.executable).parent / "reservations")
# Seconds a step may wait for an event, from the contract's promises on the local stack: it
# is on the bus within 2 s of its commit, put there by the relay pass that writes it to the
# org feed; a read never returns the last 5 s (the settle window); a follower reads again
# 1 s (--poll) after a read that found nothing; a read is one call of a function that has
# 30 s locally (a cold one's too). So a follower shows an event within 2 + 5 + 1 + 2 x 30 =
# 68 s of its commit, however loaded the machine.
WAIT = 90
# Seconds from Ctrl-C to exit: KeyboardInterrupt ends a follower's sleep or read at once.
INTERRUPTED_WITHIN = 30


@pytest.fixture(scope="module")
def stack(docker_ready: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    fleet = json.loads((ROOT / "fleets" / "demo.json").read_text())
    yield from run_stack(tmp_path_factory.mktemp("cli"), fleet, consumers=True)


def settings(stack: Stack, kind: str = "broker") -> dict[str, str]:
    return {**os.environ, "RESERVATIONS_API_URL": stack.api,
            "RESERVATIONS_API_KEY": KEYS[kind], "COLUMNS": "200"}  # fmt: skip


def reservations(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    """One command, run to its end: a session step."""
    step = STEPS.start(["reservations", *args])
    try:
        done = subprocess.run([COMMAND, *args], env=settings(stack), capture_output=True,
                              text=True, timeout=WAIT, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        step.end(f"ran past {WAIT} s")
        raise
    step.end(f"exit {done.returncode}")
    assert KEYS["broker"] not in done.stdout + done.stderr
    return done


class Running:
    """A command that runs until Ctrl-C (a follower), started as from a terminal, its
    output read as it comes: a session step until it is stopped."""

    def __init__(self, stack: Stack, *args: str) -> None:
        self.step = STEPS.start(["reservations", *args])
        RUNNING.append(self)
        self.process = subprocess.Popen(
            [COMMAND, *args], env=settings(stack), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, preexec_fn=as_in_a_terminal,
        )  # fmt: skip
        self.out: list[str] = []
        self.err: list[str] = []
        self.readers = [
            threading.Thread(target=_read, args=(stream, lines), daemon=True)
            for lines, stream in ((self.out, self.process.stdout), (self.err, self.process.stderr))
        ]
        for reader in self.readers:
            reader.start()

    def wait_for(self, what: str, found: Callable[[], bool], deadline: float) -> None:
        """Until ``found()``; failed (the step saying so) if it exits or ``deadline`` passes."""
        while not found():
            if self.process.poll() is not None:
                self.step.end(f"exit {self.process.returncode}")
                pytest.fail(f"{self.step.command}: exited before {what}\n{self.output()}")
            if time.monotonic() > deadline:
                self.step.outcome = f"no {what}"
                pytest.fail(f"{self.step.command}: no {what} in time\n{self.output()}")
            time.sleep(0.1)

    def said(self, text: str) -> bool:
        return any(text in line for line in self.err)

    def interrupted(self) -> tuple[int, str, str]:
        """Ctrl-C, then its exit status, output and errors."""
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=INTERRUPTED_WITHIN)
        except subprocess.TimeoutExpired:
            self.step.outcome = "Ctrl-C ignored"
            self.process.kill()
            self.process.wait()
            pytest.fail(f"{self.step.command}: running {INTERRUPTED_WITHIN} s after Ctrl-C\n"
                        f"{self.output()}")  # fmt: skip
        for reader in self.readers:
            reader.join()
        self.step.end(f"exit {self.process.returncode} on Ctrl-C")
        return self.process.returncode, "".join(self.out), "".join(self.err)

    def output(self) -> str:
        out, err = "".join(self.out)[-2000:], "".join(self.err)[-2000:]
        return f"--- its output\n{out}--- its errors\n{err}"

    def stop(self) -> None:
        """Killed if still running (a failed test must not leave a follower behind)."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


RUNNING: list[Running] = []


@pytest.fixture(autouse=True)
def _no_follower_left() -> Iterator[None]:
    yield
    while RUNNING:
        RUNNING.pop().stop()


def _read(stream: IO[str] | None, lines: list[str]) -> None:
    """Each line as it comes, until the stream ends."""
    for line in stream or ():
        lines.append(line)


class Receiver:
    """A webhook receiver on 127.0.0.1 that verifies each delivery as a user's would."""

    def __init__(self) -> None:
        self.secret = ""
        self.events: list[Any] = []
        self.refused: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                try:
                    receiver.events.append(verify_webhook(body, dict(self.headers.items()),
                                                          receiver.secret))  # fmt: skip
                    self.send_response(204)
                except Exception as refused:
                    receiver.refused.append(str(refused))
                    self.send_response(400)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        threading.Thread(target=self.server.serve_forever, args=(0.1,), daemon=True).start()


WAITING = "waiting for new events"  # a follower's first read reached the feed's end


def test_a_brokers_session_with_the_command_line_only(stack: Stack) -> None:
    assert reservations(stack, "--help").returncode == 0
    units = json.loads(reservations(stack, "-o", "json", "units", A1).stdout)
    assert "0000:05:00.0" in [u["id"] for u in units if u.get("released")]

    reclaim = ["reclaim", A1, RES, "--units", "0000:05:00.0", "--reason", "cli session"]
    dry = json.loads(reservations(stack, "-o", "json", *reclaim, "--dry-run").stdout)
    assert dry["wouldTerminate"] == ["vm-18"]

    receiver = Receiver()
    listen = Running(stack, "webhooks", "listen", "--forward-to", receiver.url, "--poll", "1")
    tail = Running(stack, "-o", "json", "events", "tail", "--follow", "--poll", "1")
    # Each follows the feed from its start: the reclaim comes once both have read its end.
    started = time.monotonic()
    for follower in (listen, tail):
        follower.wait_for("first read of the feed", partial(follower.said, WAITING),
                          started + WAIT)  # fmt: skip
    receiver.secret = next(line for line in listen.out if "signing secret: " in line).split(
        "signing secret: ")[1].strip()  # fmt: skip

    done = reservations(stack, "-o", "json", *reclaim, "--idempotency-key", "cli-e2e-1")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["terminated"] == ["vm-18"]
    committed = time.monotonic()
    listen.wait_for(
        "reclaim's events at the receiver",
        lambda: {e.type_ for e in receiver.events} >= {"reservation.reclaimed",
                                                     "workload.termination_requested"},
        committed + WAIT,
    )  # fmt: skip
    assert receiver.refused == []
    reclaimed = next(e for e in receiver.events if e.type_ == "reservation.reclaimed")
    assert reclaimed.data.to_dict()["reason"] == "cli session"
    TIMINGS["cli session: reclaim -> forwarded by webhooks listen"] = time.monotonic() - committed
    # tail reads the same feed on its own, each second: it shows the event within a read or
    # two of listen, and within WAIT of the commit whatever the load.
    tail.wait_for("reclaimed event", lambda: any(reclaimed.id in line for line in tail.out),
                  committed + WAIT)  # fmt: skip
    TIMINGS["cli session: reclaim -> shown by events tail"] = time.monotonic() - committed

    status, out, err = tail.interrupted()
    assert (status, err.strip().splitlines()[-1]) == (0, "stopped")
    tailed = [json.loads(line) for line in out.splitlines()]
    assert reclaimed.id in [e["id"] for e in tailed]
    status, out, err = listen.interrupted()
    assert (status, "Traceback" in err) == (0, False)
    assert f"{reclaimed.id}  204" in out


def test_an_error_exits_1_with_its_code_and_request_id(stack: Stack) -> None:
    hidden = reservations(stack, "units", "node-nowhere")
    assert (hidden.returncode, hidden.stdout) == (1, "")
    assert "code: not_found  status: 404  request id: " in hidden.stderr
    refused = reservations(stack, "reclaim", A1, RES, "--plan", "p", "--notice", "2m")
    assert refused.returncode == 2  # a usage error, before any call: a plan has its notice
    assert "--notice" in refused.stderr
