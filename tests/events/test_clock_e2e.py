"""The clock through the local stack (`make run`, the demo fleet): a reservation created to
start ~15 s ahead and end ~40 s ahead gets ``reservation.activated``, ``.expiring`` and
``.expired`` each exactly once, each with ``time`` its moment, on the org feed
(``GET /v1/events``) and, signed, at a webhook receiver bound to 127.0.0.1. With the stack's
ExpiryWarningMinutes (60) longer than the term, the warning's moment is ``startsAt``.
The local pass runs every 10 s (``devstack.pump.CLOCK_SECONDS``); how late after its moment
each event reached the feed is recorded in the timings."""

from __future__ import annotations

import io
import json
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devstack import pump
from devstack.net import free_port
from devstack.webhook_receiver import serve
from tests.support.e2e import ROOT, TIMINGS
from tests.support.stack import Stack, get_again_after_503, post_keyed, run_stack

pytestmark = pytest.mark.e2e
OWNER = {"Authorization": "Bearer vl_local_only_owner"}
TYPES = ["reservation.activated", "reservation.expiring", "reservation.expired"]
PATIENCE = 180  # seconds: the test's, not the promise (a pass every 10 s)
SETTLE = 25  # seconds after the last arrival: two more passes that must write nothing


@pytest.fixture(scope="module")
def demo_stack(docker_ready: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    fleet = json.loads((ROOT / "fleets" / "demo.json").read_text())
    yield from run_stack(tmp_path_factory.mktemp("clock"), fleet, consumers=True)


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _feed(stack: Stack, subject: str) -> list[dict[str, Any]]:
    """The org feed's clock events of ``subject``, every page."""
    found: list[dict[str, Any]] = []
    cursor = None
    for _ in range(100):
        query = {"limit": "100", **({"cursor": cursor} if cursor else {})}
        answer = get_again_after_503(f"{stack.api}/v1/events", OWNER, query)
        assert answer.status_code == 200, answer.text
        page = answer.json()
        found += [e for e in page["items"] if e["subject"] == subject and e["type"] in TYPES]
        cursor = page.get("nextCursor")
        if not cursor or not page["items"]:
            break
    return found


def _received(printed: io.StringIO, subject: str) -> list[dict[str, Any]]:
    bodies = [json.loads(b) for b in re.findall(r"^  body: (.*)$", printed.getvalue(), re.M)]
    return [b for b in bodies if b.get("subject") == subject and b.get("type") in TYPES]


def test_a_short_reservation_gets_each_clock_event_once_at_its_moment_on_the_feed_and_hook(
    demo_stack: Stack,
) -> None:
    assert pump.CLOCK_SECONDS == 10.0  # the contract's local clock period
    port, printed = free_port(), io.StringIO()
    hook = post_keyed(f"{demo_stack.api}/v1/webhooks", OWNER,
                      {"url": f"http://127.0.0.1:{port}/hooks", "types": TYPES},
                      key=f"clock-e2e-hook-{port}")  # fmt: skip
    assert hook.status_code == 201, hook.text + demo_stack.diagnostics()
    servers = serve(["127.0.0.1"], port, [hook.json()["secret"]], out=printed)
    try:
        now = datetime.now(UTC).replace(microsecond=0)
        starts, ends = now + timedelta(seconds=15), now + timedelta(seconds=40)
        body = {"unitIds": ["0000:22:00.0"], "allowedOrgIds": ["org-lab"],
                "managingOrgIds": ["org-broker"], "startsAt": starts.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "endsAt": ends.strftime("%Y-%m-%dT%H:%M:%SZ")}  # fmt: skip
        created = post_keyed(f"{demo_stack.api}/v1/nodes/node-c3/reservations", OWNER, body,
                             key=f"clock-e2e-{now:%H%M%S}")  # fmt: skip
        assert created.status_code == 201, created.text
        assert created.json()["status"] == "pending"
        subject = f"reservations/{created.json()['id']}"
        deadline = time.monotonic() + PATIENCE
        seen: dict[str, float] = {}
        while time.monotonic() < deadline:
            for event in _feed(demo_stack, subject):
                seen.setdefault(event["type"], time.time())
            if len(seen) == 3 and len(_received(printed, subject)) >= 3:
                break
            time.sleep(1)
        time.sleep(SETTLE)  # later passes (and the history mover) must add nothing
        feed, received = _feed(demo_stack, subject), _received(printed, subject)
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
    moments = {"reservation.activated": starts, "reservation.expiring": starts,
               "reservation.expired": ends}  # fmt: skip
    assert sorted(e["type"] for e in feed) == sorted(TYPES), feed
    assert sorted(b["type"] for b in received) == sorted(TYPES), printed.getvalue()
    for event in feed + received:
        assert _time(event["time"]) == moments[event["type"]], event
        assert event["data"]["actor"] == {"system": "clock"}
    assert len({e["id"] for e in feed}) == 3
    assert {e["id"] for e in feed} == {b["id"] for b in received}
    assert "NOT VERIFIED" not in printed.getvalue()
    for kind, at in seen.items():
        TIMINGS[f"clock: {kind} moment to org feed (make run)"] = at - moments[kind].timestamp()
