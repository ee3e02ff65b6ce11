"""Commit to org feed and to the bus, in the local stack: ``make run`` (the demo fleet, free
ports) is started, then a batch of real reclaims is made one at a time over HTTP (the
broker's, of one unit of res-a-active on node-a1, lent again before each), and each one's
``reservation.reclaimed`` is waited for on the bus (a rule to a queue of the bench's own)
and in the broker's org feed (over HTTP).
"""

from __future__ import annotations

import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from devstack.emulator import LOCAL_CREDENTIALS, local_client
from devstack.events import received, watch
from devstack.net import free_port

ROOT = Path(__file__).resolve().parents[1]
READY = re.compile(r"make run: ready in \d+ s\. API: (http://\S+)")
BATCH = 20
WAIT_SECONDS = 60.0  # a bound on one event's wait, not a goal
BROKER = "Bearer vl_local_only_broker"  # the demo fleet's; it reads its org's events
RESERVATION = "/v1/nodes/node-a1/reservations/res-a-active"
UNIT = "0000:09:00.0"  # lent by res-a-active, and nothing runs on it
NODE_FEED = "/v1/nodes/node-a1/events"
ORG_FEED = "/v1/events"


@contextmanager
def local_stack(log: Path) -> Iterator[tuple[str, str]]:
    """``python -m devstack.run`` on free ports until the block ends; (API URL, emulator)."""
    api_port, emulator_port = free_port(), free_port()
    env = {**os.environ, **LOCAL_CREDENTIALS, "API_PORT": str(api_port),
           "AWS_EMULATOR_PORT": str(emulator_port), "RUN_CONSUMERS": "0"}  # fmt: skip
    env.pop("AWS_ENDPOINT_URL", None)
    with log.open("w") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "devstack.run"], cwd=ROOT, env=env, stdout=sink,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    try:
        yield _ready(process, log), f"http://127.0.0.1:{emulator_port}"
    finally:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def _ready(process: subprocess.Popen[bytes], log: Path) -> str:
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        if ready := READY.search(log.read_text(errors="replace")):
            return ready.group(1)
        if process.poll() is not None:
            raise SystemExit(f"bench: make run exited; see {log}")
        time.sleep(1)
    raise SystemExit(f"bench: make run was not ready in 15 minutes; see {log}")


def _call(api: str, method: str, path: str, body: Any = None) -> Any:
    """One call as the broker (a local-only demo key); the answer's JSON."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(  # noqa: S310 - our own loopback URL
        f"{api}{path}", data=data, method=method,
        headers={"Authorization": BROKER, "Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
        return json.load(response)


def _reclaimed_ids(api: str, feed: str, after: str) -> list[tuple[str, str]]:
    """(id, reason) of the reservation.reclaimed events of a feed after ``after``."""
    items = _call(api, "GET", f"{feed}?types=reservation.reclaimed&after={after}")["items"]
    return [(e["id"], e["data"].get("reason", "")) for e in items]


def commit_and_wait(api: str, emulator: str, watch_url: str, n: int) -> tuple[float, float]:
    """Seconds from one reclaim's answer (its commit is just before) to its
    ``reservation.reclaimed`` on the bus and in the broker's org feed. The unit is lent
    first (a release: an event too, not timed), so every reclaim takes it back."""
    _call(api, "POST", f"{RESERVATION}/release", {"unitIds": [UNIT]})
    after = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    reason = f"bench {n} {time.time_ns()}"
    _call(api, "POST", f"{RESERVATION}/reclaim", {"unitIds": [UNIT], "reason": reason})
    committed = time.monotonic()
    # The node's feed has it at once (the same transaction): its id.
    [event_id] = [i for i, r in _reclaimed_ids(api, NODE_FEED, after) if r == reason]
    sqs = local_client("sqs", emulator)
    bus = feed = None
    while (bus is None or feed is None) and time.monotonic() - committed < WAIT_SECONDS:
        if bus is None and event_id in [e["id"] for e in received(sqs, watch_url, wait=0)]:
            bus = time.monotonic() - committed
        if feed is None and event_id in [i for i, _ in _reclaimed_ids(api, ORG_FEED, after)]:
            feed = time.monotonic() - committed
        time.sleep(0.02)
    return (bus or WAIT_SECONDS), (feed or WAIT_SECONDS)


def run(log: Path) -> dict[str, Any]:
    """The batch's medians (and worst), after one event that warms the path."""
    with local_stack(log) as (api, emulator):
        watch_url = watch(local_client("events", emulator), local_client("sqs", emulator),
                          queue="BenchEventWatch")  # fmt: skip
        commit_and_wait(api, emulator, watch_url, 0)
        samples = [commit_and_wait(api, emulator, watch_url, n) for n in range(1, BATCH + 1)]
    bus, feed = [s[0] for s in samples], [s[1] for s in samples]
    return {
        "events": BATCH,
        "bus_median_s": statistics.median(bus),
        "bus_max_s": max(bus),
        "feed_median_s": statistics.median(feed),
        "feed_max_s": max(feed),
    }
