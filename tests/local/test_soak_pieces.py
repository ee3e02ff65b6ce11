"""``make soak``'s pieces that need no stack: its faults' schedule and how each is made (the
supervisor's kill and restart over a stand-in process), its webhook receiver
(up, down, up again; only what its signature verifies), its calls' retries as the auditor records them, and the section of
docs/reliability.md it writes."""

from __future__ import annotations

import json
import random
import sys
import threading
import time
from collections import Counter
from datetime import UTC, datetime

import httpx
import pytest
from standardwebhooks import Webhook

from devstack.containers import LOCAL_PROCESS_ENV
from devstack.net import free_port, listening
from devstack.soak import report
from devstack.soak.calls import Calls
from devstack.soak.faults import KINDS, Fault, Faults, schedule
from devstack.soak.followers import WebhookReceiver
from devstack.soak.stack import Command, Supervisor

pytestmark = pytest.mark.allow_hosts(["127.0.0.1"])


def test_the_faults_are_one_of_each_kind_then_more_at_seeded_moments_inside_the_run():
    plan = schedule(random.Random("1-faults"), 600)
    assert sorted({fault.kind for fault in plan}) == sorted(KINDS)
    assert len(plan) == 30
    assert all(5 <= fault.at <= 585 for fault in plan)
    # The receiver down past the sender's 5-s retry, for up to a minute; the emulator slowed
    # for 10-40 s, each request held 0.2-3 s (past the functions' 2-s read timeout at the
    # top), or refusing for 5-30 s; a killed process down 1-5 s.
    lasting = {
        "webhook receiver down": (20, 60),
        "emulator slowed": (10, 40),
        "emulator refusing connections": (5, 30),
        "emulator answering 503": (5, 30),
    }
    for fault in plan:
        low, high = lasting.get(fault.kind, (1, 5))
        assert low <= fault.seconds <= high, fault
        assert (0.2 <= fault.delay <= 3.0) if fault.kind == "emulator slowed" else not fault.delay
    assert [f.at for f in plan] == sorted(f.at for f in plan)
    assert plan == schedule(random.Random("1-faults"), 600)
    assert plan != schedule(random.Random("2-faults"), 600)
    assert len(schedule(random.Random("2-faults"), 60)) == len(KINDS)
    assert {
        "kill -9 the triggered functions' sam local",
        "kill -9 the sender's sam local",
        "emulator slowed",
        "emulator refusing connections",
        "emulator answering 503",
    } <= set(KINDS)


class Recorded:
    """Stands for the supervisor, the receiver, the proxy and the clock: each call noted
    with its moment."""

    def __init__(self, clock_fails: bool = False) -> None:
        self.calls: list[tuple[float, str]] = []
        self.clock_fails = clock_fails
        self.lock = threading.Lock()

    def note(self, what: str) -> None:
        with self.lock:
            self.calls.append((time.monotonic(), what))

    def kill(self, name: str) -> None:
        self.note(f"kill {name}")

    def start(self, name: str) -> None:
        self.note(f"start {name}")

    def down(self) -> None:
        self.note("receiver down")

    def up(self) -> None:
        self.note("receiver up")

    def tell(self, line: str) -> None:
        self.note(f"proxy: {line}")

    def clock(self) -> None:
        self.note("clock pass")
        if self.clock_fails:
            raise OSError("connection refused")

    def said(self) -> list[str]:
        return [what for _, what in sorted(self.calls)]


def perform(faults: list[Fault], seen: Recorded) -> Faults:
    done: Counter[str] = Counter()
    performer = Faults(seen, seen, seen.clock, seen, done)  # type: ignore[arg-type]
    performer.run(faults, time.monotonic(), threading.Event()).join(30)
    return performer


def test_each_fault_does_what_its_kind_says():
    seen = Recorded()
    performer = perform(
        [
            Fault(0.0, "kill -9 the sender's sam local", 0.05),
            Fault(0.3, "emulator slowed", 0.5, delay=1.25),
        ],
        seen,
    )
    assert seen.said() == ["kill sender", "start sender", "proxy: slow 1.25 0.5"]
    assert performer.done == {"kill -9 the sender's sam local": 1, "emulator slowed": 1}
    kill, start = seen.calls[0][0], seen.calls[1][0]
    assert start - kill >= 0.05  # down for the fault's seconds, then started again


def test_faults_on_one_thing_take_turns_and_others_overlap_them():
    seen = Recorded()
    perform(
        [
            Fault(0.0, "emulator refusing connections", 0.4),
            Fault(0.05, "emulator answering 503", 0.1),
            Fault(0.1, "kill -9 the pump", 0.1),
        ],
        seen,
    )
    moments = {what: at for at, what in seen.calls}
    assert moments["proxy: refuse 0.1 503"] - moments["proxy: refuse 0.4 reset"] >= 0.35
    assert moments["kill pump"] < moments["proxy: refuse 0.1 503"]  # not held up by them


def test_a_fault_that_fails_is_counted_as_failed_not_done():
    """Two clock passes while the triggered functions' sam local is down are refused."""
    seen = Recorded(clock_fails=True)
    performer = perform([Fault(0.0, "clock passes overlapping", 1.0)], seen)
    assert seen.said() == ["clock pass", "clock pass"]
    assert performer.done == {}
    assert performer.failed == {"clock passes overlapping": 1}


# A process that stands for a sam local: it starts a child in its own process group, notes
# its environment and the child's pid, and listens on its port only after a moment.
LISTENER = (
    f"LABEL = {LOCAL_PROCESS_ENV!r}"
    + """
import json, os, socket, subprocess, sys, time
port, notes = int(sys.argv[1]), sys.argv[2]
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
with open(notes, "a") as out:
    out.write(json.dumps({"child": child.pid, "label": os.environ.get(LABEL),
                          "given": os.environ.get("GIVEN")}) + "\\n")
if os.path.exists(notes + ".once"):
    time.sleep(0.5)
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen()
    time.sleep(600)
open(notes + ".once", "w").close()  # the first start exits before it answers
"""
)


def gone(pid: int) -> bool:
    """Not running (no process, or a zombie no one has reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def test_the_supervisor_kills_a_group_removes_what_it_left_and_starts_it_on_its_port(tmp_path):
    port, notes = free_port(), tmp_path / "notes"
    removed: list[tuple[str, str]] = []

    def remove(stack: str, label: str) -> int:
        removed.append((stack, label))
        return 0

    command = Command([sys.executable, "-c", LISTENER, str(port), str(notes)], {"GIVEN": "1"}, port)
    processes = Supervisor({"triggered": command}, tmp_path, "stack-1", remove)
    try:
        processes.start_all()  # the first exits before it answers: started again
        assert listening(port)
        first, second = (json.loads(line) for line in notes.read_text().splitlines())
        assert removed == [("stack-1", first["label"])]  # what the one that exited left
        assert gone(first["child"])  # and what was left of its group
        assert second["given"] == "1"
        assert second["label"].startswith("triggered-")
        assert second["label"] != first["label"]

        processes.kill("triggered")
        assert not listening(port)
        deadline = time.monotonic() + 10
        while not gone(second["child"]) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert gone(second["child"])  # the whole group, not the process alone
        assert removed[-1] == ("stack-1", second["label"])
        assert "triggered" not in processes.running

        processes.start("triggered")
        assert listening(port)  # the same port, answering again
        third = json.loads(notes.read_text().splitlines()[-1])
        assert third["label"] not in (first["label"], second["label"])
    finally:
        processes.stop_all()
    assert not listening(port)
    assert processes.running == {}
    assert (tmp_path / "triggered.log").exists()


def test_a_process_that_ends_by_itself_is_counted_and_started_again(tmp_path):
    """The pump ended by a fault of its own, not by the soak's: said, and not left down."""
    command = Command([sys.executable, "-c", "import time; time.sleep(0.3)"])
    lasting = Command([sys.executable, "-c", "import time; time.sleep(600)"])
    processes = Supervisor({"pump": command, "consumers": lasting}, tmp_path, "stack-1")
    try:
        processes.start_all()
        first = processes.running["pump"]
        assert processes.revive() == []  # both running
        first.wait(10)
        assert processes.revive() == ["pump"]
        assert processes.exits == {"pump": 1}
        assert processes.running["pump"] is not first
        assert processes.alive("pump")
        processes.start("consumers")  # running: not started twice
        assert len(processes.running) == 2
    finally:
        processes.stop_all()


def test_killing_a_process_not_running_is_an_error_not_a_fault_made(tmp_path):
    processes = Supervisor({"pump": Command(["true"])}, tmp_path, "stack-1")
    with pytest.raises(RuntimeError, match="pump is not running"):
        processes.kill("pump")


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
