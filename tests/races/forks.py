"""What every race test does: invoke functions at once, each in its own forked process (as in
its own Lambda container: Powertools keeps the request in class state, so two requests must
not share a process), and make them decide from the same snapshot."""

from __future__ import annotations

import multiprocessing
from collections.abc import Sequence
from typing import Any

import pytest

from reservations.dal import clients, store
from tests.support.lambdas import HttpResult, invoke, load_function

FORK = multiprocessing.get_context("fork")
# A function's event, and the function it is for.
Call = tuple[str, dict[str, Any]]
# The read itself, kept before any test wraps it (a test may wrap it once per round).
READ_NODE = store.load_node


def barrier_after_first_read(monkeypatch: pytest.MonkeyPatch, parties: int) -> Any:
    """Each process's first node read waits for every other's first read, so all decide
    from one snapshot; returns a counter of every read, across the processes."""
    barrier = FORK.Barrier(parties, timeout=30)
    reads = FORK.Value("i", 0)
    first = {"done": False}  # per process once forked

    def load(node_id: str) -> Any:
        snapshot = READ_NODE(node_id)
        with reads.get_lock():
            reads.value += 1
        if not first["done"]:
            first["done"] = True
            barrier.wait()
        return snapshot

    monkeypatch.setattr(store, "load_node", load)
    return reads


def _invoke_in_own_process(function: str, event: dict[str, Any], results: Any, index: int) -> None:
    clients.reset()  # no connection shared with the parent
    results.put((index, invoke(load_function(function), event)))


def concurrently(calls: Sequence[Call]) -> list[HttpResult]:
    """Invoke every call at once, each in its own process; the answers in the calls' order."""
    results = FORK.Queue()
    processes = [
        FORK.Process(target=_invoke_in_own_process, args=(function, event, results, index))
        for index, (function, event) in enumerate(calls)
    ]
    for process in processes:
        process.start()
    collected = dict(results.get(timeout=90) for _ in processes)
    for process in processes:
        process.join(timeout=30)
    return [collected[index] for index in range(len(calls))]
