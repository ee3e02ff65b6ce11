"""Independent reads at once (a sharded feed's page): results in the items' order, the
calls truly concurrent, an error raised to the caller."""

from __future__ import annotations

import threading

import pytest

from reservations.kernel.parallel import each


def test_results_come_in_the_items_order_whatever_finishes_first():
    gates = {i: threading.Event() for i in range(5)}

    def read(i: int) -> int:
        if i < 4:  # the first ones wait for the last: they finish after it
            assert gates[4].wait(5)
        gates[i].set()
        return i * 10

    assert each(read, range(5)) == [0, 10, 20, 30, 40]


def test_the_reads_run_at_once():
    # Each read waits for all of them to have started: one after another would never pass.
    started = threading.Barrier(8, timeout=5)
    assert each(lambda i: started.wait() >= 0 and i, range(8)) == list(range(8))


def test_one_read_runs_in_the_callers_thread():
    assert each(lambda _: threading.current_thread().name, ["only"]) == [
        threading.current_thread().name
    ]


def test_an_error_reaches_the_caller():
    def read(i: int) -> int:
        if i == 2:
            raise TimeoutError("shard 2 did not answer")
        return i

    with pytest.raises(TimeoutError, match="shard 2"):
        each(read, range(4))
