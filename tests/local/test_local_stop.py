"""How ``make run`` stops (Ctrl-C): the emulator outlives the processes that call it, and a
process that ignores SIGTERM is killed after its grace and named.

Stopped all at once, the node side's calls to an emulator already gone were retried with
backoff, and the stack took 14 s to stop on an idle machine (over 30 s on a loaded one)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from devstack import run

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
