"""``make soak``'s pieces that need no stack: its faults' schedule, its webhook receiver
(up, down, up again; only what its signature verifies), its calls' retries as the auditor records them, and the section of
docs/reliability.md it writes."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime

import httpx
import pytest
from standardwebhooks import Webhook

from devstack.net import free_port
from devstack.soak import report
from devstack.soak.calls import Calls
from devstack.soak.faults import KINDS, schedule
from devstack.soak.followers import WebhookReceiver

pytestmark = pytest.mark.allow_hosts(["127.0.0.1"])


def test_the_faults_are_one_of_each_kind_then_more_at_seeded_moments_inside_the_run():
    plan = schedule(random.Random("1-faults"), 600)
    assert sorted({fault.kind for fault in plan}) == sorted(KINDS)
    assert len(plan) == 30
    assert all(5 <= fault.at <= 585 for fault in plan)
    # The receiver down past the sender's 5-s retry, for up to a minute; the others 1-5 s.
    down = [f.seconds for f in plan if f.kind == "webhook receiver down"]
    assert down
    assert all(20 <= seconds <= 60 for seconds in down)
    assert all(1 <= f.seconds <= 5 for f in plan if f.kind != "webhook receiver down")
    assert [f.at for f in plan] == sorted(f.at for f in plan)
    assert plan == schedule(random.Random("1-faults"), 600)
    assert len(schedule(random.Random("2-faults"), 60)) == len(KINDS)


SECRET = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"  # local-only, made up for these tests


def delivered(url: str, event_id: str, secret: str = SECRET) -> int:
    """A delivery as the sender signs it (standardwebhooks), with ``secret``."""
    body, now = json.dumps({"id": event_id}), datetime.now(UTC)
    headers = {
        "webhook-id": event_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": Webhook(secret).sign(event_id, now, body),
    }
    return httpx.post(url, headers=headers, content=body).status_code


def test_the_webhook_receiver_keeps_each_delivery_and_refuses_while_down():
    receiver = WebhookReceiver(free_port())
    receiver.secret = SECRET
    url = f"http://127.0.0.1:{receiver.port}/"
    try:
        assert delivered(url, "evt-1") == 204
        receiver.down()
        with pytest.raises(httpx.ConnectError):
            delivered(url, "evt-2")
        receiver.up()
        assert delivered(url, "evt-3") == 204
    finally:
        receiver.down()
    assert receiver.received() == ["evt-1", "evt-3"]


def test_the_webhook_receiver_keeps_only_a_delivery_its_secret_verifies():
    """A forged or mis-signed delivery is refused (400: the sender tries again) and counted:
    a signing fault shows as events missed."""
    receiver = WebhookReceiver(free_port())
    receiver.secret = SECRET
    url = f"http://127.0.0.1:{receiver.port}/"
    try:
        assert delivered(url, "evt-forged", "whsec_" + "c2VjcmV0LW9mLWFub3RoZXItb25l") == 400
        assert httpx.post(url, headers={"webhook-id": "evt-bare"}, content=b"{}").status_code == 400
        assert delivered(url, "evt-signed") == 204
    finally:
        receiver.down()
    assert (receiver.received(), receiver.unverified) == (["evt-signed"], 2)


def test_a_503_is_tried_again_with_the_same_key_and_each_attempt_recorded():
    seen: list[tuple[int, str | None]] = []

    def api(request: httpx.Request) -> httpx.Response:
        seen.append((len(seen), request.headers.get("idempotency-key")))
        if len(seen) == 1:
            return httpx.Response(503, headers={"Retry-After": "0"}, json={"code": "internal"})
        if len(seen) == 2:
            return httpx.Response(409, headers={"Retry-After": "0"}, json={"code": "conflict"})
        return httpx.Response(200, json={"id": "res-1"})

    calls = Calls("http://127.0.0.1:9", {"broker": "vl_x"}, seed=3)
    calls._client = lambda: httpx.Client(  # type: ignore[method-assign]
        base_url="http://127.0.0.1:9", transport=httpx.MockTransport(api)
    )
    answer = calls.call("broker-1", "broker", "POST", "/v1/x/release", body={}, op="release")
    assert (answer.status, answer.body) == (200, {"id": "res-1"})
    assert {key for _, key in seen} == {"soak-3-broker-1-1"}
    assert [(a["call"], a["status"], a["retryAfter"]) for a in calls.attempts] == [
        ("broker-1-1", 503, "0"),
        ("broker-1-1", 409, "0"),
        ("broker-1-1", 200, None),
    ]
    assert calls.answers() == {"release 200": 1}


def test_the_figures_replace_the_section_between_the_markers(tmp_path, monkeypatch):
    doc = tmp_path / "reliability.md"
    doc.write_text(f"# Reliability\n\nbefore\n\n{report.BEGIN}\nold\n{report.END}\n\nafter\n")
    monkeypatch.setattr(report, "DOC", doc)
    report.write("seed 7: figures")
    text = doc.read_text()
    assert text.startswith("# Reliability\n\nbefore\n\n")
    assert text.endswith(f"{report.END}\n\nafter\n")
    assert "seed 7: figures" in text
    assert "old" not in text
    doc.write_text("# Reliability\n")
    report.write("seed 8")
    assert doc.read_text().count(report.BEGIN) == 1
