"""The soak's faults, at moments its seed picks:

- the pump, the node consumers, and the two ``sam local start-lambda`` (the triggered
  functions': the relays, the clock, the sweeper, the termination reports; and the webhook
  sender's) killed (SIGKILL to the process group: what they held is left as a crash leaves
  it; a sam local's containers removed) and started again 1-5 s later with the same command
  line, on the same port (a sam local: until it answers again);
- the webhook receiver down for 20 s to a minute (past the sender's 5-s retry: its
  deliveries come 5 minutes later, or are owed);
- clock passes overlapping (two more invoked at once while the pump runs its own);
- the emulator, as the functions and the pump reach it (through ``devstack.fault_proxy``):
  slowed (each request held 0.2-3 s, for 10-40 s: past the functions' 2-s read timeout
  at the top of the range), refusing connections (those open cut, new ones reset, for
  5-30 s), or answering each request 503 (for 5-30 s).

Each fault starts at its moment on a thread of its own, so that faults of different kinds
overlap as they fall; two faults on the same thing (the same process, the receiver, the
emulator) take turns."""

from __future__ import annotations

import json
import random
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from devstack.soak.followers import WebhookReceiver
from devstack.soak.stack import Supervisor

KILLED = {  # a kind of fault -> the process it kills (as make run names it)
    "kill -9 the pump": "pump",
    "kill -9 the node consumers": "consumers",
    "kill -9 the triggered functions' sam local": "triggered",
    "kill -9 the sender's sam local": "sender",
}
EMULATOR = {  # a kind of fault -> how the proxy refuses (None: slowed)
    "emulator slowed": None,
    "emulator refusing connections": "reset",
    "emulator answering 503": "503",
}
RECEIVER_DOWN = "webhook receiver down"
CLOCK = "clock passes overlapping"
KINDS = (*KILLED, RECEIVER_DOWN, CLOCK, *EMULATOR)


@dataclass(frozen=True)
class Fault:
    at: float  # seconds into the run
    kind: str
    seconds: float  # how long it lasts
    delay: float = 0.0  # the emulator slowed: how long each request is held


def schedule(rng: random.Random, duration: float) -> list[Fault]:
    """One of each kind, then one more every 20 s of the run, each at a seeded moment
    between 5 s in and 15 s before the end (the same seed, the same faults)."""
    count = max(len(KINDS), int(duration / 20))
    kinds = [*KINDS, *(rng.choice(KINDS) for _ in range(count - len(KINDS)))]
    latest = max(6.0, duration - 15)
    faults = [_fault(rng, rng.uniform(5, latest), kind) for kind in kinds]
    return sorted(faults, key=lambda fault: fault.at)


def _fault(rng: random.Random, at: float, kind: str) -> Fault:
    """How long a fault lasts: the receiver down for 20-60 s, the emulator slowed for 10-40 s
    (each request by 0.2-3 s) or refusing for 5-30 s, a killed process 1-5 s."""
    if kind == RECEIVER_DOWN:
        return Fault(at, kind, rng.uniform(20, 60))
    if kind == "emulator slowed":
        return Fault(at, kind, rng.uniform(10, 40), delay=round(rng.uniform(0.2, 3.0), 2))
    if kind in EMULATOR:
        return Fault(at, kind, rng.uniform(5, 30))
    return Fault(at, kind, rng.uniform(1, 5))


def target(kind: str) -> str:
    """What a fault acts on: two faults on one thing take turns."""
    if kind in KILLED:
        return KILLED[kind]
    return "emulator" if kind in EMULATOR else kind


class Proxy(Protocol):
    def tell(self, line: str) -> None: ...


@dataclass
class Faults:
    """Performs a schedule: each fault on a thread of its own from its moment (it lasts
    ``seconds``); what was done counted in ``done``, what failed in ``failed``."""

    processes: Supervisor
    receiver: WebhookReceiver
    clock: Callable[[], Any]
    proxy: Proxy
    done: Counter[str]
    failed: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self._turns = {target(kind): threading.Lock() for kind in KINDS}
        self._counting = threading.Lock()

    def run(self, faults: list[Fault], started: float, stop: threading.Event) -> threading.Thread:
        """A thread that starts each fault at its moment until ``stop``, then waits for
        those started to end."""

        def loop() -> None:
            performing: list[threading.Thread] = []
            for fault in faults:
                if stop.wait(max(0.0, started + fault.at - time.monotonic())):
                    break
                one = threading.Thread(
                    target=self.in_turn,
                    args=(fault, stop),
                    name=f"fault {fault.kind}",
                    daemon=True,
                )
                one.start()
                performing.append(one)
            for one in performing:
                one.join()

        thread = threading.Thread(target=loop, name="faults", daemon=True)
        thread.start()
        return thread

    def in_turn(self, fault: Fault, stop: threading.Event) -> None:
        """``fault``, once no other fault acts on its target (none once ``stop``)."""
        with self._turns[target(fault.kind)]:
            if stop.is_set():
                return
            began = time.monotonic()
            _say(f"fault at {fault.at:.0f} s: {fault.kind} ({_lasting(fault)})")
            try:
                self.perform(fault)
            except Exception as error:
                with self._counting:
                    self.failed[fault.kind] += 1
                _say(f"fault {fault.kind} failed: {error!r}")
                traceback.print_exc()
                return
            _say(f"fault over: {fault.kind} (after {time.monotonic() - began:.1f} s)")
        with self._counting:
            self.done[fault.kind] += 1

    def perform(self, fault: Fault) -> None:
        if fault.kind == CLOCK:
            errors: list[BaseException] = []

            def one_pass() -> None:
                try:
                    self.clock()
                except Exception as error:
                    errors.append(error)

            passes = [threading.Thread(target=one_pass) for _ in range(2)]
            for one in passes:
                one.start()
            for one in passes:
                one.join()
            if errors:
                raise errors[0]
            return
        if fault.kind == RECEIVER_DOWN:
            self.receiver.down()
            time.sleep(fault.seconds)
            self.receiver.up()
            return
        if fault.kind in EMULATOR:
            how = EMULATOR[fault.kind]
            seconds = f"{fault.seconds:.1f}"
            told = f"slow {fault.delay} {seconds}" if how is None else f"refuse {seconds} {how}"
            self.proxy.tell(told)
            time.sleep(fault.seconds)
            return
        name = KILLED[fault.kind]
        self.processes.kill(name)
        time.sleep(fault.seconds)
        self.processes.start(name)


def _say(message: str) -> None:
    """A line of the soak's output, with the wall time the logs of the stack carry."""
    print(f"make soak: {time.strftime('%H:%M:%S')} {message}", flush=True)


def _lasting(fault: Fault) -> str:
    if fault.kind == CLOCK:
        return "two passes"
    if fault.kind == "emulator slowed":
        return f"{fault.delay} s a request for {fault.seconds:.1f} s"
    return f"{fault.seconds:.1f} s"


def clock_pass(lambda_client: Any) -> Callable[[], Any]:
    """One invocation of ClockFunction through ``sam local start-lambda``."""

    def invoke() -> Any:
        response = lambda_client.invoke(FunctionName="ClockFunction", Payload=b"{}")
        return json.loads(response["Payload"].read() or b"{}")

    return invoke
