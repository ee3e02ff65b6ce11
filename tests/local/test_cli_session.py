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
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from reservations_client import verify_webhook
from tests.support.api_tools import KEYS
from tests.support.e2e import ROOT
from tests.support.stack import Stack, run_stack

pytestmark = pytest.mark.e2e
A1, RES = "node-a1", "res-a-active"
COMMAND = str(Path(sys.executable).parent / "reservations")
WAIT = 90  # seconds: a cold function container, the stream's relay to the org feed


@pytest.fixture(scope="module")
def stack(docker_ready: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    fleet = json.loads((ROOT / "fleets" / "demo.json").read_text())
    yield from run_stack(tmp_path_factory.mktemp("cli"), fleet, consumers=True)


def settings(stack: Stack, kind: str = "broker") -> dict[str, str]:
    return {**os.environ, "RESERVATIONS_API_URL": stack.api,
            "RESERVATIONS_API_KEY": KEYS[kind], "COLUMNS": "200"}  # fmt: skip


def reservations(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([COMMAND, *args], env=settings(stack), capture_output=True, text=True,
                          timeout=WAIT, check=False)  # fmt: skip
    assert KEYS["broker"] not in done.stdout + done.stderr
    return done


def started(stack: Stack, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([COMMAND, *args], env=settings(stack), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip


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


def first_line(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    return process.stdout.readline()


def interrupted(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    return process.returncode, out, err


def test_a_brokers_session_with_the_command_line_only(stack: Stack) -> None:
    assert reservations(stack, "--help").returncode == 0
    units = json.loads(reservations(stack, "-o", "json", "units", A1).stdout)
    assert "0000:05:00.0" in [u["id"] for u in units if u.get("released")]

    reclaim = ["reclaim", A1, RES, "--units", "0000:05:00.0", "--reason", "cli session"]
    dry = json.loads(reservations(stack, "-o", "json", *reclaim, "--dry-run").stdout)
    assert dry["wouldTerminate"] == ["vm-18"]

    receiver = Receiver()
    listen = started(stack, "webhooks", "listen", "--forward-to", receiver.url, "--poll", "1")
    receiver.secret = first_line(listen).split("signing secret: ")[1].strip()
    tail = started(stack, "-o", "json", "events", "tail", "--follow", "--poll", "1")
    time.sleep(2)  # both have read the feed's end once

    done = reservations(stack, "-o", "json", *reclaim, "--idempotency-key", "cli-e2e-1")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["terminated"] == ["vm-18"]
    deadline = time.monotonic() + WAIT
    while {e.type_ for e in receiver.events} < {"reservation.reclaimed",
                                               "workload.termination_requested"}:  # fmt: skip
        assert time.monotonic() < deadline, (receiver.events, receiver.refused)
        time.sleep(0.5)
    assert receiver.refused == []
    reclaimed = next(e for e in receiver.events if e.type_ == "reservation.reclaimed")
    assert reclaimed.data.to_dict()["reason"] == "cli session"

    time.sleep(3)  # tail polls on its own (every second): give it one more read than listen
    status, out, err = interrupted(tail)
    assert (status, err.strip().splitlines()[-1]) == (0, "stopped")
    tailed = [json.loads(line) for line in out.splitlines()]
    assert reclaimed.id in [e["id"] for e in tailed]
    status, out, err = interrupted(listen)
    assert (status, "Traceback" in err) == (0, False)
    assert f"{reclaimed.id}  204" in out


def test_an_error_exits_1_with_its_code_and_request_id(stack: Stack) -> None:
    hidden = reservations(stack, "units", "node-nowhere")
    assert (hidden.returncode, hidden.stdout) == (1, "")
    assert "code: not_found  status: 404  request id: " in hidden.stderr
    refused = reservations(stack, "reclaim", A1, RES, "--plan", "p", "--notice", "2m")
    assert refused.returncode == 2  # a usage error, before any call: a plan has its notice
    assert "--notice" in refused.stderr
