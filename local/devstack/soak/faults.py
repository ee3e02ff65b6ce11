"""The soak's faults, at moments its seed picks: the pump and the node consumers killed
(SIGKILL: what they held is left as a crash leaves it) and started again a few seconds
later, the webhook receiver down for 20 s to a minute (past the sender's 5-s retry: its
deliveries come 5 minutes later, or are owed), and clock passes overlapping (two more
invoked at once while the pump runs its own)."""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from devstack.soak.followers import WebhookReceiver
from devstack.soak.stack import NodeSide

KINDS = (
    "kill -9 the pump",
    "kill -9 the node consumers",
    "webhook receiver down",
    "clock passes overlapping",
)


@dataclass(frozen=True)
class Fault:
    at: float  # seconds into the run
    kind: str
    seconds: float  # how long it lasts


def schedule(rng: random.Random, duration: float) -> list[Fault]:
    """One of each kind, then one more every 20 s of the run, each at a seeded moment
    between 5 s in and 15 s before the end."""
    count = max(len(KINDS), int(duration / 20))
    kinds = [*KINDS, *(rng.choice(KINDS) for _ in range(count - len(KINDS)))]
    latest = max(6.0, duration - 15)
    faults = [Fault(rng.uniform(5, latest), kind, _lasting(rng, kind)) for kind in kinds]
    return sorted(faults, key=lambda fault: fault.at)


def _lasting(rng: random.Random, kind: str) -> float:
    """How long a fault lasts: the receiver down for 20-60 s, the others 1-5 s."""
    return rng.uniform(20, 60) if kind == "webhook receiver down" else rng.uniform(1, 5)


@dataclass
class Faults:
    """Performs a schedule on a thread of its own (a fault lasts ``seconds``)."""

    node_side: NodeSide
    receiver: WebhookReceiver
    clock: Callable[[], Any]
    done: Counter[str]

    def run(self, faults: list[Fault], started: float, stop: threading.Event) -> threading.Thread:
        def loop() -> None:
            for fault in faults:
                if stop.wait(max(0.0, started + fault.at - time.monotonic())):
                    return
                self.perform(fault)

        thread = threading.Thread(target=loop, name="faults", daemon=True)
        thread.start()
        return thread

    def perform(self, fault: Fault) -> None:
        self.done[fault.kind] += 1
        if fault.kind == "clock passes overlapping":
            passes = [threading.Thread(target=self.clock) for _ in range(2)]
            for one in passes:
                one.start()
            for one in passes:
                one.join()
            return
        if fault.kind == "webhook receiver down":
            self.receiver.down()
            time.sleep(fault.seconds)
            self.receiver.up()
            return
        name = "pump" if fault.kind == "kill -9 the pump" else "consumers"
        self.node_side.kill(name)
        time.sleep(fault.seconds)
        self.node_side.start(name)


def clock_pass(lambda_client: Any) -> Callable[[], Any]:
    """One invocation of ClockFunction through ``sam local start-lambda``."""

    def invoke() -> Any:
        response = lambda_client.invoke(FunctionName="ClockFunction", Payload=b"{}")
        return json.loads(response["Payload"].read() or b"{}")

    return invoke
