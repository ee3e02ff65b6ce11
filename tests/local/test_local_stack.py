"""The local stack as a black-box user drives it: `python -m devstack.run` (= `make run`) with
our own fleet file, then plain HTTP against the API and boto3 against the AWS emulator, then
Ctrl-C.

One stack serves the whole module (it takes a while to start); the tests run in file order
and the last one stops it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
import requests

from devstack.containers import stack_containers
from devstack.events import received, watch
from devstack.net import docker_bridge_address, listening
from tests.support.e2e import REPORTS, TIMINGS, tail
from tests.support.stack import (
    BROKER,
    EVENTS_KEY,
    NODE,
    OPERATOR,
    OTHER_NODE,
    OWNER,
    READY,
    RELEASED,
    REQUEST_TIMEOUT,
    RESERVATION,
    STRANGER,
    Stack,
    alive,
    patient,
    run_stack,
    stack_fleet,
)

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(docker_ready: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    stack_dir = tmp_path_factory.mktemp("stack")
    yield from run_stack(stack_dir, stack_fleet(), consumers=False, warm="EAGER")


def assert_json(response: requests.Response) -> None:
    assert response.headers["Content-Type"] == "application/json"


def comparable(response: requests.Response) -> tuple[int, dict[str, str], bytes]:
    """Status, headers (but the clock's) and body bytes: what must not tell 404s apart, the
    request's own id (its X-Request-Id, repeated as the body's requestId) aside."""
    request_id = response.headers["X-Request-Id"]
    headers = {k.lower(): v for k, v in response.headers.items() if k.lower() != "date"}
    headers["x-request-id"] = "<id>"
    body = response.content.replace(f'"requestId":"{request_id}"'.encode(), b'"requestId":"<id>"')
    assert b"<id>" in body, response.content
    return response.status_code, headers, body


def drain(sqs: Any, queue_url: str, expect: int, wait: float = 10) -> list[dict[str, Any]]:
    """Receive and delete until ``expect`` distinct terminations arrived or ``wait`` passed."""
    bodies: dict[str, dict[str, Any]] = {}
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and len(bodies) < expect:
        messages = sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1
        ).get("Messages", [])
        for message in messages:
            body = json.loads(message["Body"])
            bodies.setdefault(body["terminationId"], body)  # a re-send is the same termination
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    return list(bodies.values())


def test_make_run_prints_the_url_and_a_curl_line(stack: Stack) -> None:
    output = tail(stack.stdout, 100_000)
    ready = READY.search(output)
    assert ready is not None
    assert ready.group(2) == stack.api
    assert re.search(rf"curl .*Authorization: Bearer vl_\w+.* {re.escape(stack.api)}/v1/", output)


@pytest.mark.parametrize("who", [OPERATOR, OWNER, BROKER])
def test_list_units_is_the_sorted_array_of_the_nodes_units(stack: Stack, who: str) -> None:
    response = stack.get_units(NODE, who)
    assert response.status_code == 200, response.text
    assert_json(response)
    units = response.json()
    assert isinstance(units, list)
    assert [u["id"] for u in units] == [
        "0000:04:00.0",
        "0000:05:00.0",
        "0000:06:00.0",
        "0000:07:00.0",
        "0000:0a:00.0",
    ]
    by_id = {u["id"]: u for u in units}
    assert by_id["0000:04:00.0"] == {
        "id": "0000:04:00.0",
        "allocClass": "vfio-group",
        "gpuModelId": "nvidia-h100-sxm5-80gb",
        "gpuModelName": "NVIDIA H100 SXM5 80GB",
        "sellableGpus": 1,
        "state": "claimed",
        "claimedBy": "vm:vm-s1",
        "reservable": True,
        "reservationId": RESERVATION,
        "released": True,
        # what a spot workload placed on it now would be promised: its reservation has no
        # lending policy
        "promisedNoticeSeconds": 0,
        "promisedMinRunSeconds": 0,
    }
    assert by_id["0000:05:00.0"]["claimedBy"] == "pod:pod-s2"
    assert by_id["0000:07:00.0"]["released"] is False
    assert by_id["0000:0a:00.0"]["reservable"] is False
    assert "held for the host" in by_id["0000:0a:00.0"]["notReservableReason"]
    assert "reservationId" not in by_id["0000:0a:00.0"]


@pytest.mark.parametrize(
    "authorization", [None, "Basic dmxfZTJlOg==", "Bearer vl_e2e_nobody", "Bearer"]
)
def test_no_valid_key_is_401_with_www_authenticate(stack: Stack, authorization: str | None) -> None:
    response = stack.get_units(NODE, authorization)
    assert response.status_code == 401, response.text
    assert_json(response)
    assert response.headers["WWW-Authenticate"] == "Bearer"
    body = response.json()
    assert set(body) == {"error", "code", "requestId"}
    assert body["code"] == "unauthorized"
    assert isinstance(body["error"], str)
    assert body["error"]


def test_every_404_is_byte_identical(stack: Stack) -> None:
    cases = {
        "unknown node": stack.get_units("node-nowhere", OPERATOR),
        "stranger": stack.get_units(NODE, STRANGER),
        "another org's node": stack.get_units(OTHER_NODE, OWNER),
        "malformed id": stack.get_units("-node!", OPERATOR),
        "overlong id": stack.get_units("n" * 200, OPERATOR),
    }
    first = cases["unknown node"]
    assert first.status_code == 404, first.text
    assert_json(first)
    body = first.json()
    assert body == {"error": body["error"], "code": "not_found", "requestId": body["requestId"]}
    assert body["requestId"] == first.headers["X-Request-Id"]
    for name, response in cases.items():
        assert comparable(response) == comparable(first), name
    # Each request its own id, the one its error body and its log lines carry.
    assert len({response.headers["X-Request-Id"] for response in cases.values()}) == len(cases)


def test_unknown_routes_methods_and_empty_ids_get_the_same_404(stack: Stack) -> None:
    """Through the $default route's function, not sam local's (or API Gateway's) own."""
    reference = stack.get_units("node-nowhere", OPERATOR)
    units = f"{stack.api}/v1/nodes/{NODE}/reservations/units"
    # No redirects followed: a 308 to a merged path would hide what answered the request.
    options: dict[str, Any] = {
        "headers": {"Authorization": OPERATOR},
        "timeout": REQUEST_TIMEOUT,
        "allow_redirects": False,
    }
    cases = {
        "GET /nope": patient.get(f"{stack.api}/nope", **options),
        "DELETE units": patient.delete(units, **options),
        "POST units": patient.post(units, data="{}", **options),
        "empty node id": patient.get(f"{stack.api}/v1/nodes//reservations/units", **options),
    }
    assert reference.status_code == 404, reference.text
    for name, response in cases.items():
        assert response.status_code == 404, (name, response.status_code, response.text)
        assert comparable(response)[::2] == comparable(reference)[::2], name
        assert response.headers["Content-Type"] == reference.headers["Content-Type"], name


def test_a_dry_run_reports_and_changes_nothing(stack: Stack) -> None:
    before = stack.get_units(NODE, OPERATOR)
    response = stack.reclaim({"unitIds": RELEASED, "dryRun": True})
    assert response.status_code == 200, response.text
    assert_json(response)
    body = response.json()
    assert body["id"] == RESERVATION
    assert body["nodeId"] == NODE
    assert body["status"] == "active"
    assert body["wouldTerminate"] == ["pod-s2", "vm-s1"]
    assert body["wouldSkip"] == ["vm-o1"]
    assert body["releasedUnitIds"] == RELEASED
    assert "terminated" not in body
    after = stack.get_units(NODE, OPERATOR)
    assert after.status_code == 200
    assert after.content == before.content
    sqs = stack.aws("sqs")
    queue = sqs.get_queue_url(QueueName=f"reservations-node-{NODE}.fifo")["QueueUrl"]
    assert drain(sqs, queue, expect=1, wait=2) == []


@pytest.fixture(scope="module")
def bus_watch(stack: Stack) -> str:
    """A rule on the stack's bus to a queue of the test's own, made before the reclaim."""
    return str(watch(stack.aws("events"), stack.aws("sqs"), queue="E2EEventWatch"))


@pytest.fixture(scope="module")
def real_reclaim(stack: Stack, bus_watch: str) -> tuple[requests.Response, float]:
    """The reclaim of the three released units, done once for the tests that look at it,
    and when it answered."""
    response = stack.reclaim({"unitIds": RELEASED, "reason": "lab needs its GPUs back (e2e)"})
    return response, time.monotonic()


def test_a_real_reclaim_terminates_spot_workloads_and_skips_the_rest(
    stack: Stack, real_reclaim: tuple[requests.Response, float]
) -> None:
    response = real_reclaim[0]
    assert response.status_code == 200, response.text
    assert_json(response)
    body = response.json()
    assert body["id"] == RESERVATION
    assert body["terminated"] == ["pod-s2", "vm-s1"]
    assert body["skipped"] == ["vm-o1"]
    assert body["releasedUnitIds"] == []
    assert body["reservedUnitIds"] == [*RELEASED, "0000:07:00.0"]
    assert "wouldTerminate" not in body
    units = {u["id"]: u for u in stack.get_units(NODE, OPERATOR).json()}
    for unit_id in RELEASED:
        assert units[unit_id]["released"] is False
        assert units[unit_id]["reservationId"] == RESERVATION


def test_each_terminated_workload_gets_one_message_on_its_nodes_queue(
    stack: Stack, real_reclaim: tuple[requests.Response, float]
) -> None:
    assert real_reclaim[0].status_code == 200, real_reclaim[0].text
    node_item = stack.aws("dynamodb").get_item(
        TableName="ReservationsTable",
        Key={"PK": {"S": f"NODE#{NODE}"}, "SK": {"S": "#NODE"}},
    )["Item"]
    sqs = stack.aws("sqs")
    queue = node_item["queueUrl"]["S"]
    assert queue == sqs.get_queue_url(QueueName=f"reservations-node-{NODE}.fifo")["QueueUrl"]

    messages = drain(sqs, queue, expect=2)
    by_workload = {m["workloadId"]: m for m in messages}
    assert sorted(by_workload) == ["pod-s2", "vm-s1"]
    assert by_workload["vm-s1"]["workloadKind"] == "vm"
    assert by_workload["vm-s1"]["unitIds"] == ["0000:04:00.0"]
    assert by_workload["pod-s2"]["workloadKind"] == "pod"
    assert by_workload["pod-s2"]["unitIds"] == ["0000:05:00.0"]
    for message in messages:
        assert message["version"] == 1
        assert message["nodeId"] == NODE
        assert message["reservationId"] == RESERVATION
        assert message["reason"] == "lab needs its GPUs back (e2e)"
        assert isinstance(message["terminationId"], str)
        assert message["terminationId"]
        requested = datetime.fromisoformat(message["requestedAt"].replace("Z", "+00:00"))
        assert requested.tzinfo is not None
    assert len({m["terminationId"] for m in messages}) == 2

    other = sqs.get_queue_url(QueueName=f"reservations-node-{OTHER_NODE}.fifo")["QueueUrl"]
    assert drain(sqs, other, expect=1, wait=1) == []


def test_the_reclaims_events_reach_the_bus_and_the_org_feed(
    stack: Stack, bus_watch: str, real_reclaim: tuple[requests.Response, float]
) -> None:
    """The reclaim's events, written in its transaction (the node's feed shows them once
    the settle window has passed): the pump hands the stream to the relay, which fans them
    out and puts them on the bus. The time each took from the reclaim's answer is printed
    (``make bench`` measures it over a batch); the wait is only a bound."""
    answered = real_reclaim[1]
    events = _node_feed(stack)
    while len(events) < 3 and time.monotonic() - answered < 60:
        time.sleep(0.25)
        events = _node_feed(stack)
    TIMINGS["events: reclaim -> all in the node feed (settle window)"] = time.monotonic() - answered
    assert sorted((e["type"], e["subject"]) for e in events) == [
        ("reservation.reclaimed", f"reservations/{RESERVATION}"),
        ("workload.termination_requested", "workloads/pod-s2"),
        ("workload.termination_requested", "workloads/vm-s1"),
    ]
    assert events[0]["data"]["actor"]["keyId"].startswith("key-")  # the owner sees key ids
    ids = {e["id"] for e in events}
    on_bus: set[str] = set()
    bus_at = feed_at = None
    while (bus_at is None or feed_at is None) and time.monotonic() - answered < 60:
        on_bus |= {e["id"] for e in received(stack.aws("sqs"), bus_watch, wait=0)}
        if bus_at is None and ids <= on_bus:
            bus_at = time.monotonic() - answered
        if feed_at is None and ids <= set(_org_feed_ids(stack)):
            feed_at = time.monotonic() - answered
        time.sleep(0.05)
    assert bus_at is not None, f"not all on the bus after 60 s:\n{stack.diagnostics()}"
    assert feed_at is not None, f"not all in the org feed after 60 s:\n{stack.diagnostics()}"
    TIMINGS["events: reclaim -> all on the bus"] = bus_at
    TIMINGS["events: reclaim -> all in the org feed"] = feed_at


def _node_feed(stack: Stack) -> list[dict[str, Any]]:
    response = patient.get(
        f"{stack.api}/v1/nodes/{NODE}/events", headers={"Authorization": OWNER},
        timeout=REQUEST_TIMEOUT,
    )  # fmt: skip
    assert response.status_code == 200, response.text
    return list(response.json()["items"])


def _org_feed_ids(stack: Stack) -> list[str]:
    response = patient.get(
        f"{stack.api}/v1/events",
        headers={"Authorization": f"Bearer {EVENTS_KEY}"},
        timeout=REQUEST_TIMEOUT,
    )
    assert response.status_code == 200, response.text
    return [event["id"] for event in response.json()["items"]]


def test_ctrl_c_stops_everything_it_started(stack: Stack) -> None:
    """Last: Ctrl-C (SIGINT to make run's process group) and nothing is left behind."""
    assert stack.process.poll() is None, "make run stopped on its own"
    assert stack.children, "make run started no processes?"
    started = time.monotonic()
    os.killpg(stack.process.pid, signal.SIGINT)
    try:
        code = stack.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"make run still running 30 s after Ctrl-C:\n{stack.diagnostics()}")
    TIMINGS["make run: Ctrl-C to exit"] = time.monotonic() - started
    assert code == 0, stack.diagnostics()
    # What make run said while it stopped: the processes slower than 2 s, each with its time.
    stopping = tail(stack.stdout, 100_000).split("make run: stopping...", 1)[-1].strip()
    REPORTS.append(f"make run's stop after Ctrl-C:\n{stopping}")
    assert "killed" not in stopping, stopping  # each honoured its SIGTERM

    problems = []
    if listening(stack.api_port):
        problems.append(f"the API port {stack.api_port} is still open")
    if listening(stack.emulator_port):
        problems.append(f"the AWS emulator's port {stack.emulator_port} is still open")
    bridge = docker_bridge_address()
    if bridge and listening(stack.emulator_port, bridge):
        problems.append(f"the AWS emulator still listens on {bridge}")
    survivors = sorted(pid for pid in stack.children if alive(pid))
    if survivors:
        problems.append(f"child processes still running: {survivors}")
    containers = sorted(stack_containers(stack.id))
    if containers:
        problems.append(f"Lambda containers still there: {[c[:12] for c in containers]}")
    # An abandoned lock makes every later `sam local` on the machine wait 5 minutes for it.
    locks = sorted(lock.name for lock in stack.sam_tmp.glob("*.lock"))
    if locks:
        problems.append(f"SAM image-build locks left behind: {locks}")
    assert problems == [], "after Ctrl-C: " + "; ".join(problems)
