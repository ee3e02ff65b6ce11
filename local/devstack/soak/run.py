"""``make soak``: the local stack driven by seeded concurrent actors, with faults, for
``SOAK_MINUTES`` (default 10; ``SOAK_SEED``, default 1), then audited from its feeds.

1. Docker must answer (else: skipped, exit 2); ``make run`` starts as the end-to-end tests
   start it, with a fleet of keys, ``RUN_NODE_SIDE=0`` and ``RUN_START_LAMBDA=0``: the two
   ``sam local start-lambda``, the pump and the node consumers are the soak's own
   processes; the functions and the pump reach the emulator through the soak's fault
   proxy (``stack.py``);
2. a webhook subscription of the operator's org to a receiver on 127.0.0.1, a rule from the
   bus to a queue, two nodes registered through the API;
3. the actors (``actors.py``) and the followers run for the given minutes, the faults
   (``faults.py``) at their moments;
4. the actors stop; the stack settles (no workload terminating); the followers are given
   time to catch up with every event up to that moment;
5. the auditor judges the record (``reservations_tools.soak``), the figures are printed and
   written to docs/reliability.md (``report.py``), the record kept in
   ``.local/soak-<seed>/record.json``. Exit 1 on any violation.

The seed fixes each actor's choices and the faults' moments; how the actors' threads
interleave is the machine's.
"""

from __future__ import annotations

import json
import os
import random
import sys
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from devstack.net import free_port
from devstack.run import ROOT
from devstack.soak import report
from devstack.soak.actors import ACTORS, run_actor
from devstack.soak.calls import Calls
from devstack.soak.faults import Faults, clock_pass, schedule
from devstack.soak.followers import BusFollower, FeedFollower, WebhookReceiver
from devstack.soak.stack import Stack, Supervisor, docker_unavailable, start_stack, stop_stack
from reservations_tools.soak.audit import audit, render
from reservations_tools.soak.record import record_of

NODES = {"node-soak-a": 6, "node-soak-b": 4}
READ, CAPACITY, WRITE = "reservation.read", "reservation.capacity", "reservation.write"
ROLES = {
    "operator": (
        "vl_local_only_soak_operator",
        "org-platform",
        [READ, CAPACITY, WRITE, "node.write", "workload.place", "events.read", "usage.read"],
    ),
    "owner": ("vl_local_only_soak_owner", "org-acme", [READ, CAPACITY, WRITE]),
    "broker": ("vl_local_only_soak_broker", "org-broker", [READ, CAPACITY]),
}
SETTLE_SECONDS = 420  # notices and minimum runs of a few minutes at most, and a sweep
CATCH_UP_SECONDS = 420  # a webhook attempt that failed twice is tried again 5 min later
OWED_READS = 300  # deliveries read for the events the webhook receiver has not had


def say(message: str) -> None:
    print(f"make soak: {message}", flush=True)


def fleet() -> dict[str, Any]:
    keys = [
        {"key": key, "orgId": org, "permissions": permissions, "id": f"soak-{role}"}
        for role, (key, org, permissions) in ROLES.items()
    ]
    return {"platformOrgId": "org-platform", "apiKeys": keys, "nodes": []}


def register(calls: Calls) -> None:
    for node, count in NODES.items():
        body = {
            "ownerOrgId": "org-acme",
            "topologyGen": 1,
            "units": [
                {
                    "id": f"0000:{4 + n:02x}:00.0",
                    "allocClass": "vfio-group",
                    "gpuModelId": "nvidia-h100-sxm5-80gb",
                    "sellableGpus": 1 + n % 2,
                    "sellable": True,
                }
                for n in range(count)
            ],
        }
        answer = calls.call(
            "setup", "operator", "PUT", f"/v1/nodes/{node}", body=body, op="put node"
        )
        if answer.status not in (200, 201):
            raise SystemExit(f"make soak: registering {node} answered {answer.status}")


def subscribe(calls: Calls, port: int) -> tuple[str, str]:
    """The subscription's id and secret."""
    answer = calls.call(
        "setup",
        "operator",
        "POST",
        "/v1/webhooks",
        body={"url": f"http://127.0.0.1:{port}/"},
        op="subscribe",
    )
    if answer.status != 201:
        raise SystemExit(f"make soak: the webhook subscription answered {answer.status}")
    return str(answer.body["id"]), str(answer.body["secret"])


def main() -> int:
    minutes = float(os.environ.get("SOAK_MINUTES") or 10)
    seed = int(os.environ.get("SOAK_SEED") or 1)
    reason = docker_unavailable()
    if reason is not None:
        say(f"skipped, the local stack needs Docker: {reason}")
        return 2
    directory = ROOT / ".local" / f"soak-{seed}"
    say(f"seed {seed}, {minutes:g} minute(s); starting make run (logs in {directory})")
    stack = start_stack(directory, fleet())
    say(f"make run ready: {stack.api}")
    try:
        return Soak(stack, minutes, seed).run()
    finally:
        stop_stack(stack)


class Soak:
    def __init__(self, stack: Stack, minutes: float, seed: int) -> None:
        self.stack, self.minutes, self.seed = stack, minutes, seed
        self.calls = Calls(stack.api, {role: key for role, (key, _, _) in ROLES.items()}, seed)
        self.processes = Supervisor(stack.supervised, stack.directory, stack.label)
        self.receiver = WebhookReceiver(free_port())
        self.feed = FeedFollower(self.calls)
        self.bus = BusFollower(stack.aws("events"), stack.aws("sqs"))
        self.faults_done: Counter[str] = Counter()
        self.faults_failed: Counter[str] = Counter()
        self.stop = threading.Event()
        self.subscription = ""

    def run(self) -> int:
        self.subscription, self.receiver.secret = subscribe(self.calls, self.receiver.port)
        say(f"starting {', '.join(self.stack.supervised)} (until each answers)")
        self.processes.start_all()
        register(self.calls)
        started = datetime.now(UTC)
        try:
            self.drive()
            cutoff = self.settle()
            document = self.record(started, cutoff)
        finally:
            self.processes.stop_all()
            self.receiver.down()
        (self.stack.directory / "record.json").write_text(json.dumps(document))
        result = audit(record_of(document))
        print(render(result))
        figures = report.figures(self, result, started)
        print(figures)
        report.write(figures)
        return 1 if result.violations else 0

    def drive(self) -> None:
        """The actors, the followers and the faults, for the run's minutes."""
        seconds = self.minutes * 60
        faults = Faults(
            self.processes,
            self.receiver,
            clock_pass(self.stack.lambda_client()),
            self.stack.proxy,
            self.faults_done,
            self.faults_failed,
        )
        plan = schedule(random.Random(f"{self.seed}-faults"), seconds)  # noqa: S311
        began = time.monotonic()
        threads = [
            run_actor(self.calls, self.seed, name, list(NODES), self.stop) for name in ACTORS
        ]
        threads.append(faults.run(plan, began, self.stop))
        while time.monotonic() - began < seconds:
            time.sleep(2)
            self.follow()
            self.tend()
        say(f"{seconds:.0f} s driven; stopping the actors")
        self.stop.set()
        for thread in threads:
            thread.join()
        self.processes.start_all()  # a fault cut short by the end leaves none down

    def follow(self) -> None:
        self.feed.read()
        self.bus.read()

    def tend(self) -> None:
        """A process of the soak's that ended by itself (no fault killed it) started again,
        and said (the figures count it)."""
        for name in self.processes.revive():
            say(f"{name} had ended by itself: started again (see {name}.log)")

    def terminating(self) -> int:
        return sum(
            len(
                self.calls.call(
                    "settle",
                    "operator",
                    "GET",
                    f"/v1/nodes/{node}/workloads",
                    params={"state": "terminating"},
                    op="list workloads",
                ).items
            )
            for node in NODES
        )

    def settle(self) -> datetime:
        """Until no workload is terminating; the moment it was so (the followers' window)."""
        deadline = time.monotonic() + SETTLE_SECONDS
        while (left := self.terminating()) and time.monotonic() < deadline:
            self.tend()
            time.sleep(3)
        say(f"settled ({left} workload(s) still terminating)")
        return datetime.now(UTC)

    def feeds(self) -> dict[str, list[dict[str, Any]]]:
        feeds: dict[str, list[dict[str, Any]]] = {}
        for node in NODES:
            feeds[node], cursor = [], None
            while True:
                params = {"limit": "100", **({"cursor": cursor} if cursor else {})}
                page = self.calls.call(
                    "audit",
                    "operator",
                    "GET",
                    f"/v1/nodes/{node}/events",
                    params=params,
                    op="read the node feed",
                )
                feeds[node] += page.items
                cursor = page.body.get("nextCursor") if isinstance(page.body, dict) else None
                if page.status != 200 or not page.body.get("hasMore"):
                    break
        return feeds

    def owed(
        self, feeds: dict[str, list[dict[str, Any]]], cutoff: datetime, received: set[str]
    ) -> dict[str, Any]:
        """The delivery of each event up to ``cutoff`` the webhook receiver has not had, as
        the deliveries API says (``pending`` with its next attempt, ``failed``, ...): the
        sender tries again 5 s, then 5 and 30 minutes after a failed attempt, so a receiver
        down several times may be owed an event for longer than the catch-up."""
        deliveries: dict[str, Any] = {}
        for event_id in sorted(_due(feeds, cutoff) - received)[:OWED_READS]:
            answer = self.calls.call(
                "audit",
                "operator",
                "GET",
                f"/v1/webhooks/{self.subscription}/deliveries/{event_id}",
                op="read a delivery",
            )
            body = answer.body if isinstance(answer.body, dict) else {}
            kept = ("state", "nextAttemptAt", "attemptCount", "lastAttemptAt")
            deliveries[event_id] = {k: body[k] for k in kept if k in body}
        return {"webhook": deliveries}

    def caught_up(self, cutoff: datetime) -> dict[str, list[dict[str, Any]]]:
        """The node feeds, once every follower has every event up to ``cutoff`` (or the
        catch-up time is over)."""
        time.sleep(20)  # the clock's moments up to the cutoff (10 s a pass), relayed
        deadline = time.monotonic() + CATCH_UP_SECONDS
        while True:
            feeds = self.feeds()
            self.follow()
            due = _due(feeds, cutoff)
            behind = [name for name, ids in self.followers().items() if not due <= set(ids)]
            if not behind or time.monotonic() > deadline:
                say("followers caught up" if not behind else f"still behind: {behind}")
                return feeds
            self.tend()
            time.sleep(3)

    def followers(self) -> dict[str, list[str]]:
        return {
            "operator's feed": self.feed.ids,
            "bus": self.bus.ids,
            "webhook": self.receiver.received(),
        }

    def record(self, started: datetime, cutoff: datetime) -> dict[str, Any]:
        """The record as the auditor's command reads it (``record.py``)."""
        feeds = self.caught_up(cutoff)
        followers = self.followers()
        return {
            "seed": self.seed,
            "recordedAt": datetime.now(UTC).isoformat(),
            "followedUntil": cutoff.isoformat(),
            "nodes": feeds,
            "followers": followers,
            "owed": self.owed(feeds, cutoff, set(followers["webhook"])),
            "calls": list(self.calls.attempts),
            "usage": self.usage(started),
        }

    def usage(self, started: datetime) -> list[dict[str, Any]]:
        start = started.replace(minute=0, second=0, microsecond=0)
        end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
        rows: list[dict[str, Any]] = []
        for group in ("node", "reservation"):
            cursor = None
            while True:
                params = {
                    "from": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "to": end.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "granularity": "hour",
                    "groupBy": group,
                    "nodeId": ",".join(NODES),
                    "limit": "100",
                    **({"cursor": cursor} if cursor else {}),
                }
                page = self.calls.call(
                    "audit", "operator", "GET", "/v1/usage", params=params, op="read usage"
                )
                rows += page.items
                cursor = page.body.get("nextCursor") if isinstance(page.body, dict) else None
                if page.status != 200 or cursor is None:
                    break
        return rows


def _due(feeds: dict[str, list[dict[str, Any]]], cutoff: datetime) -> set[str]:
    """The ids of the feeds' events up to ``cutoff``."""
    return {
        e["id"]
        for events in feeds.values()
        for e in events
        if datetime.fromisoformat(e["time"].replace("Z", "+00:00")) <= cutoff
    }


if __name__ == "__main__":
    sys.exit(main())
