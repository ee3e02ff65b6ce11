"""What every race test does: invoke functions at once, each in its own process (as in its own
Lambda container: Powertools keeps the request in class state, so two requests must not share a
process), and make them decide from the same snapshot.

The processes come from a fork server, never from the test process: pytest's process runs
threads (the emulator's server, botocore's pools), and a fork copies any lock another thread
holds at that instant, so a forked child could block for ever. The fork server is one
single-threaded process that has imported the layer once; each call is a fork of it.

Nothing is waited on without a deadline. A child that raises sends its traceback, and the parent
raises it; a child that is still running at its deadline has its stacks dumped, is killed, and the
test fails naming the call. Either way the barrier is broken at once, so the other children stop
waiting for a party that will never come.

Hooks run in the children around the node read, so they must be picklable: instances of the
classes below, not closures.
"""

from __future__ import annotations

import faulthandler
import multiprocessing
import os
import signal
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

import boto3
import pytest

from tests.support import state

# A function's event, and the function it is for.
Call = tuple[str, dict[str, Any]]
Read = Callable[[str], Any]

CONTEXT = multiprocessing.get_context("forkserver")
# Imported once in the fork server, so that each fork starts with the layer loaded.
CONTEXT.set_forkserver_preload(["tests.support.race_child"])
# How long a call may run: a race call takes well under a second, seconds on a loaded machine.
DEADLINE_SECONDS = 120.0
BARRIER_SECONDS = 60.0
# After a hang, how long the calls released from the barrier have to finish.
RELEASE_SECONDS = 5.0


class ReadHook:
    """Wraps the node read in each child; the default wraps nothing.

    A hook's own failure (a broken barrier, a read that raised, a concurrent writer's change
    that failed) would reach the test only as the function's 500, so the hook keeps its
    traceback, per process, and the child reports it instead of the answer."""

    failure: str | None = None
    arrived = True  # whether this process got past every wait the hook makes

    def wrap(self, read: Read) -> Read:
        return read

    def abort(self) -> None:
        """Release any child waiting on this hook (a call failed or hung)."""

    def _noting_failure(self, step: Callable[[], Any]) -> Any:
        try:
            return step()
        except BaseException:
            self.failure = self.failure or traceback.format_exc()
            raise


class BarrierAfterFirstRead(ReadHook):
    """Each process's first node read waits for every other's first read, so all decide from
    one snapshot; ``reads`` counts every read, across the processes."""

    arrived = False

    def __init__(self, parties: int) -> None:
        self.barrier = CONTEXT.Barrier(parties, timeout=BARRIER_SECONDS)
        self.reads = CONTEXT.Value("i", 0)

    def wrap(self, read: Read) -> Read:
        def load(node_id: str) -> Any:
            snapshot = self._noting_failure(lambda: read(node_id))
            with self.reads.get_lock():
                self.reads.value += 1
            if not self.arrived:
                self._noting_failure(self.barrier.wait)
                self.arrived = True
            return snapshot

        return load

    def abort(self) -> None:
        self.barrier.abort()


class ActBetweenFirstReadAndWrite(ReadHook):
    """After the first node read of the call, ``act(endpoint)`` changes the store (what a
    concurrent writer would do between that read and the call's write); ``reads`` counts reads."""

    def __init__(self, act: Callable[[str], None]) -> None:
        self.act = act
        self.reads = CONTEXT.Value("i", 0)

    def wrap(self, read: Read) -> Read:
        def load(node_id: str) -> Any:
            snapshot = self._noting_failure(lambda: read(node_id))
            with self.reads.get_lock():
                self.reads.value += 1
                first = self.reads.value == 1
            if first:
                self._noting_failure(lambda: self.act(os.environ["AWS_ENDPOINT_URL"]))
            return snapshot

        return load


@dataclass(frozen=True)
class PlaceSpotWorkload:
    """What the spot scheduler does meanwhile: place a spot VM of org-spotbuyer on free units."""

    node_id: str
    workload_id: str
    unit_ids: tuple[str, ...]

    def __call__(self, endpoint: str) -> None:
        dynamodb = boto3.client("dynamodb", endpoint_url=endpoint)
        state.place_spot_workload(dynamodb, self.node_id, self.workload_id, list(self.unit_ids))


def barrier_after_first_read(parties: int) -> BarrierAfterFirstRead:
    """The usual hook: ``parties`` calls decide from the same snapshot."""
    return BarrierAfterFirstRead(parties)


@dataclass
class _Child:
    index: int
    call: Call
    process: Any
    answers: Connection
    stacks: Path

    @property
    def name(self) -> str:
        function, event = self.call
        method = event.get("requestContext", {}).get("http", {}).get("method", "")
        return f"call {self.index} ({function} {method} {event.get('rawPath', '')})".strip()


class RaceCallFailed(AssertionError):
    """A call of a race failed in its own process; the message carries its traceback."""


def concurrently(
    calls: Sequence[Call], hook: ReadHook | None = None, deadline: float = DEADLINE_SECONDS
) -> list[Any]:
    """Invoke every call at once, each in its own process; the answers in the calls' order."""
    hook = hook or ReadHook()
    environment = dict(os.environ)  # the test's settings (monkeypatched env), for the children
    children = [_start(index, call, hook, environment) for index, call in enumerate(calls)]
    try:
        answers = _collect(children, hook, time.monotonic() + deadline)
    finally:
        for child in children:
            _stop(child)
    return [answers[index] for index in range(len(calls))]


def _start(index: int, call: Call, hook: ReadHook, environment: dict[str, str]) -> _Child:
    from tests.support.race_child import run_call

    receive, send = CONTEXT.Pipe(duplex=False)
    handle, name = tempfile.mkstemp(prefix="race-stacks-", suffix=".txt")
    os.close(handle)
    process = CONTEXT.Process(
        target=run_call, args=(call, hook, environment, send, name), name=f"race-call-{index}"
    )
    process.start()
    send.close()  # the child's end: once the child exits, a read here ends instead of waiting
    return _Child(index, call, process, receive, Path(name))


def _collect(children: list[_Child], hook: ReadHook, deadline: float) -> dict[int, Any]:
    """Every child's answer; the first failure or hang is raised, after breaking the barrier."""
    answers: dict[int, Any] = {}
    waiting = {child.answers: child for child in children}
    while waiting:
        ready = wait(list(waiting), timeout=max(0.0, deadline - time.monotonic()))
        if not ready:
            hook.abort()  # the calls that only waited for the hung one finish now
            _drain(waiting, time.monotonic() + RELEASE_SECONDS)
            pytest.fail(_hung_message(list(waiting.values())), pytrace=False)
        for connection in ready:
            child = waiting.pop(connection)  # type: ignore[index]
            outcome, value = _receive(child)
            if outcome != "answer":
                hook.abort()
                raise RaceCallFailed(f"{child.name} failed in its process:\n{value}")
            answers[child.index] = value
    return answers


def _drain(waiting: dict[Connection, _Child], until: float) -> None:
    """Forget the calls that end before ``until``: they were not the ones that hung."""
    while waiting and (ready := wait(list(waiting), timeout=max(0.0, until - time.monotonic()))):
        for connection in ready:
            _receive(waiting.pop(connection))  # type: ignore[arg-type]


def _receive(child: _Child) -> tuple[str, Any]:
    try:
        outcome, value = child.answers.recv()
    except EOFError:
        child.process.join(timeout=5)
        return "died", f"it exited with code {child.process.exitcode} and sent nothing"
    return str(outcome), value


def _hung_message(hung: list[_Child]) -> str:
    lines = [f"{len(hung)} call(s) still running at the deadline, killed:"]
    for child in hung:
        if child.process.is_alive() and child.process.pid:
            os.kill(child.process.pid, signal.SIGUSR1)  # the child dumps its stacks
    time.sleep(1.0)
    for child in hung:
        stacks = child.stacks.read_text(errors="replace").strip() or "(no stacks dumped)"
        lines.append(f"- {child.name}, where it was:\n{stacks}")
    return "\n".join(lines)


def _stop(child: _Child) -> None:
    if child.process.is_alive():
        child.process.kill()
    child.process.join(timeout=10)
    child.answers.close()
    child.stacks.unlink(missing_ok=True)


def child_main(
    call: Call,
    hook: ReadHook,
    environment: dict[str, str],
    answers: Connection,
    stacks_path: str,
    invoke_call: Callable[[Call, ReadHook], Any],
) -> None:
    """In the child: the test's environment, a stack dump on SIGUSR1, then the answer or the
    traceback, sent to the parent."""
    os.environ.clear()
    os.environ.update(environment)
    with open(stacks_path, "w") as stacks:
        faulthandler.register(signal.SIGUSR1, file=stacks, all_threads=True)
        try:
            message: tuple[str, Any] = ("answer", invoke_call(call, hook))
        except BaseException:  # everything, SystemExit included, goes back to the parent
            message = ("error", traceback.format_exc())
        if message[0] == "answer" and hook.failure:
            message = ("error", f"{hook.failure}(the call then answered {message[1].status})")
        elif message[0] == "answer" and not hook.arrived:
            answer = message[1]
            message = ("error", f"it answered {answer.status} {answer.body_text[:300]} without "
                                "reaching the barrier, where the other calls wait for it")  # fmt: skip
        answers.send(message)
        answers.close()
