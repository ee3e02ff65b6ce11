"""Commit to org feed and to the bus, in the local stack: ``make run`` (the demo fleet, free
ports) is started, then a batch of events is committed one at a time, each waited for on
the bus (a rule to a queue of the bench's own) and in the broker's org feed (over HTTP).

Each event is committed as its change's transaction will put it (an item of the node's
feed, marked unrelayed): the calls make no event yet.
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
from reservations.dal.events import event_item
from reservations.dal.items import to_attributes
from reservations.models.domain import Reservation, ReservationStatus
from reservations.models.events import Actor, EventContext, StoredEvent
from reservations.rules.events import reservation_released

ROOT = Path(__file__).resolve().parents[1]
READY = re.compile(r"make run: ready in \d+ s\. API: (http://\S+)")
BATCH = 20
WAIT_SECONDS = 60.0  # a bound on one event's wait, not a goal
BROKER = "Bearer vl_local_only_broker"  # the demo fleet's; it reads its org's events


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


def _event(n: int) -> StoredEvent:
    now = datetime.now(UTC)
    context = EventContext("node-a1", "org-acme", f"bench-{now.timestamp()}-{n}", now,
                           Actor("org-broker", "bench-key"))  # fmt: skip
    reservation = Reservation(
        "res-a-active", "node-a1", ReservationStatus.ACTIVE, now, now, now,
        allowed_org_ids=("org-lab",), managing_org_ids=("org-broker",),
    )  # fmt: skip
    return reservation_released(context, reservation, ["0000:04:00.0"], "bench")


def _in_feed(api: str, event_id: str, after: str) -> bool:
    request = urllib.request.Request(  # noqa: S310 - our own loopback URL
        f"{api}/v1/events?types=reservation.released&after={after}",
        headers={"Authorization": BROKER},
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
        return event_id in [e["id"] for e in json.load(response)["items"]]


def commit_and_wait(api: str, emulator: str, watch_url: str, n: int) -> tuple[float, float]:
    """Seconds from one event's commit to the bus and to the org feed."""
    stored = _event(n)
    item = to_attributes(event_item(stored, 400))
    after = stored.event.envelope(False)["time"].replace("Z", "").rsplit(".", 1)[0] + "Z"
    sqs, dynamodb = local_client("sqs", emulator), local_client("dynamodb", emulator)
    dynamodb.put_item(TableName="ReservationsTable", Item=item)
    committed = time.monotonic()
    bus = feed = None
    while (bus is None or feed is None) and time.monotonic() - committed < WAIT_SECONDS:
        if bus is None and stored.id in [e["id"] for e in received(sqs, watch_url, wait=0)]:
            bus = time.monotonic() - committed
        if feed is None and _in_feed(api, stored.id, after):
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
