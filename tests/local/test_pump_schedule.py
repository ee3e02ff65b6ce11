"""The local stack's schedules: the clock's pass starts on a fixed rate, as a schedule's
``rate()`` invokes it, so a moment is written within one period however long a pass takes;
the other loops wait a period after each step. Run on a clock of the test's own."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from devstack import pump

pytestmark = pytest.mark.disable_socket


class Clock:
    """Time that moves only when a step works or the loop waits; the loop stops after
    ``steps`` steps."""

    def __init__(self, steps: int) -> None:
        self.now, self.steps, self.waits = 0.0, steps, []
        self.done = threading.Event()

    def monotonic(self) -> float:
        return self.now

    def wait(self, timeout: float) -> bool:
        self.waits.append(round(timeout, 6))
        self.now += timeout
        if len(self.waits) > self.steps:
            self.done.set()
            return True
        return False


def _run(monkeypatch, rate: bool, step_seconds: float, steps: int = 4) -> tuple[Clock, list]:
    clock, started = Clock(steps), []
    monkeypatch.setattr(pump.time, "monotonic", clock.monotonic)

    def step() -> None:
        started.append(clock.now)
        clock.now += step_seconds

    pump.every(10.0, clock, step, "test", rate=rate)  # type: ignore[arg-type]
    assert clock.done.wait(5)
    return clock, started


def test_the_clock_runs_on_a_fixed_rate_whatever_a_pass_takes(monkeypatch):
    _clock, started = _run(monkeypatch, rate=True, step_seconds=3.0)
    assert started == [10.0, 20.0, 30.0, 40.0]


def test_a_pass_that_overran_is_followed_by_the_next_at_once_then_the_rate(monkeypatch):
    clock, started = _run(monkeypatch, rate=True, step_seconds=13.0)
    assert started[:2] == [10.0, 23.0]  # the second was due at 20: it starts at once
    assert clock.waits[1] == 0.0


def test_other_loops_wait_a_period_after_each_step(monkeypatch):
    _clock, started = _run(monkeypatch, rate=False, step_seconds=3.0)
    assert started == [10.0, 23.0, 36.0, 49.0]


def test_what_the_pump_reads_before_its_loops_is_read_until_the_emulator_answers(monkeypatch):
    """The emulator refusing when the pump starts (``make soak`` kills and starts the pump
    while its fault proxy refuses): the pump reads again, and does not end."""
    monkeypatch.setattr(pump, "SETUP_RETRY_SECONDS", 0.01)
    answers: list[Any] = [OSError("connection reset"), RuntimeError("503"), ("url", "arn")]

    def read() -> Any:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert pump.until_answered(read, "the reports queue", threading.Event()) == ("url", "arn")
    assert answers == []
    stopping = threading.Event()
    stopping.set()
    assert pump.until_answered(read, "the reports queue", stopping) is None  # never read
