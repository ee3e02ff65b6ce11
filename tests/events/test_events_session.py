"""The events session (docs/sessions.md) through `make run` with the demo fleet: the broker's reclaim on
node-a1, then the spot buyer's org reading `workload.termination_requested` and
`workload.terminated` of its VMs from `GET /v1/events` (the node agent stops them and
reports), and the broker reading `reservation.reclaimed` with its reason from the node's
feed; and every event of the reclaim on the bus."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.events import received, watch
from tests.support.e2e import TIMINGS
from tests.support.stack import REQUEST_TIMEOUT, Stack, created, patient, run_stack

pytestmark = pytest.mark.e2e
NODE_FEED = "/v1/nodes/node-a1/events"
SOURCE = "/v1/nodes/node-a1"
BROKER = "Bearer vl_local_only_broker"
SPOT = "Bearer vl_local_only_spotbuyer"
WITHIN = 120  # seconds: the test's patience on a busy machine, not a goal (see make bench)


@pytest.fixture(scope="module")
def demo(docker_ready: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from run_stack(tmp_path_factory.mktemp("events"), f.demo_fleet(), consumers=True)


@pytest.fixture(scope="module")
def bus(demo: Stack) -> str:
    """A rule on the stack's bus to a queue of the test's own, made before the reclaim."""
    return str(watch(demo.aws("events"), demo.aws("sqs"), queue="E2ESessionWatch"))


@pytest.fixture(scope="module")
def reclaimed(demo: Stack, bus: str) -> float:
    """The reclaim of the README's session (its body and key); when it answered."""
    response = patient.post(
        f"{demo.api}/v1/nodes/node-a1/reservations/res-a-active/reclaim",
        headers={"Authorization": BROKER, "Idempotency-Key": "reclaim-2026-11-29-1"},
        json={"unitIds": ["0000:04:00.0", "0000:05:00.0", "0000:08:00.0"],
              "reason": "lab needs them"},
        timeout=REQUEST_TIMEOUT,
    )  # fmt: skip
    assert response.status_code == 200, response.text
    assert response.json()["terminated"] == ["vm-17", "vm-18"]
    return time.monotonic()


def _get(stack: Stack, path: str, key: str, query: dict[str, str]) -> list[dict[str, Any]]:
    response = patient.get(
        f"{stack.api}{path}", headers={"Authorization": key}, params=query,
        timeout=REQUEST_TIMEOUT,
    )  # fmt: skip
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


def _until(read: Any, done: Any, stack: Stack) -> list[dict[str, Any]]:
    deadline = time.monotonic() + WITHIN
    while True:
        items = read()
        if done(items) or time.monotonic() > deadline:
            assert done(items), f"{items}\n{stack.diagnostics()}"
            return items  # type: ignore[no-any-return]
        time.sleep(0.25)


def test_the_spot_buyer_reads_its_vms_termination_requested_then_terminated(
    demo: Stack, reclaimed: float
) -> None:
    query = {"types": "workload.termination_requested,workload.terminated"}
    items = _until(
        lambda: [e for e in _get(demo, "/v1/events", SPOT, query) if e["source"] == SOURCE],
        lambda items: len(items) == 4,
        demo,
    )  # (node-b7's pod-5, whose termination the demo fleet leaves open, is the spot buyer's)
    TIMINGS["events: reclaim -> terminated in the spot buyer's feed"] = time.monotonic() - reclaimed
    kinds = [(e["type"], e["subject"]) for e in items]
    assert sorted(kinds) == [
        ("workload.terminated", "workloads/vm-17"),
        ("workload.terminated", "workloads/vm-18"),
        ("workload.termination_requested", "workloads/vm-17"),
        ("workload.termination_requested", "workloads/vm-18"),
    ]
    # Oldest first: each VM's request before its end.
    for vm in ("vm-17", "vm-18"):
        order = [e["type"] for e in items if e["subject"] == f"workloads/{vm}"]
        assert order == ["workload.termination_requested", "workload.terminated"]
    for event in items:
        assert event["source"] == "/v1/nodes/node-a1"
        assert event["data"]["orgId"] == "org-spotbuyer"
        assert event["data"]["reservationId"] == "res-a-active"
        assert "keyId" not in str(event)  # the spot buyer is neither operator nor owner
    requested = [e for e in items if e["type"] == "workload.termination_requested"]
    assert {e["data"]["reason"] for e in requested} == {"lab needs them"}
    assert {e["data"]["actor"]["orgId"] for e in requested} == {"org-broker"}
    terminated = [e for e in items if e["type"] == "workload.terminated"]
    assert {e["data"]["outcome"] for e in terminated} == {"terminated"}
    assert all("actor" not in e["data"] and e["data"]["time"] for e in terminated)


def test_the_broker_reads_the_reclaim_with_its_reason_from_the_node_feed(
    demo: Stack, reclaimed: float
) -> None:
    [event] = _get(demo, NODE_FEED, BROKER, {"types": "reservation.reclaimed"})
    assert event["subject"] == "reservations/res-a-active"
    assert event["data"]["reason"] == "lab needs them"
    assert event["data"]["actor"] == {"orgId": "org-broker"}  # its own key id not shown
    assert (event["data"]["terminated"], event["data"]["skipped"]) == (
        ["vm-17", "vm-18"],
        ["vm-21"],
    )


def test_every_event_of_the_reclaim_is_on_the_bus(demo: Stack, bus: str, reclaimed: float) -> None:
    """What the node's feed holds of the reclaim and its reports, each on the bus at least
    once, nothing else of node-a1's (the independent consumer's count)."""
    operator = "Bearer vl_local_only_operator"
    committed = _until(
        lambda: _get(demo, NODE_FEED, operator, {"limit": "100"}),
        lambda items: sum(e["type"] == "workload.terminated" for e in items) == 2,
        demo,
    )
    expected = {e["id"] for e in committed}
    assert len(expected) == 5  # reclaimed, 2 requested, 2 terminated
    arrived: list[dict[str, Any]] = []
    deadline = time.monotonic() + WITHIN
    while not expected <= {e["id"] for e in arrived} and time.monotonic() < deadline:
        arrived += received(demo.aws("sqs"), bus, wait=1)
    seen = {e["id"] for e in arrived if e["source"] == "/v1/nodes/node-a1"}
    assert seen == expected, demo.diagnostics()


OWNER = "Bearer vl_local_only_owner"
OPERATOR = "Bearer vl_local_only_operator"
UNIT = {"id": "0000:04:00.0", "allocClass": "vfio-group", "gpuModelId": "nvidia-h100-sxm5-80gb",
        "sellableGpus": 1, "sellable": True}  # fmt: skip


def _to_the_end(stack: Stack, cursor: str | None) -> tuple[list[dict[str, Any]], str]:
    """The owner's feed from ``cursor`` (None: the start) to its current end, a page of 5 at
    a time; and the cursor to go on from later."""
    items: list[dict[str, Any]] = []
    for _ in range(1000):
        query = {"limit": "5", **({"cursor": cursor} if cursor else {})}
        response = patient.get(f"{stack.api}/v1/events", headers={"Authorization": OWNER},
                                params=query, timeout=REQUEST_TIMEOUT)  # fmt: skip
        assert response.status_code == 200, response.text
        page = response.json()
        items += page["items"]
        cursor = page["nextCursor"]  # on every page, the last one too
        if not page["hasMore"]:
            return items, cursor
    raise AssertionError("the feed never reached its end")


def _write_on_several_nodes(stack: Stack, nodes: list[str]) -> None:
    """Each node registered, a reservation made and cancelled on it, node after node."""
    for node in nodes:
        base, owner = f"{stack.api}/v1/nodes/{node}", {"Authorization": OWNER}
        put = {"ownerOrgId": "org-acme", "topologyGen": 1, "units": [UNIT]}
        registered = patient.put(base, json=put, headers={"Authorization": OPERATOR},
                                  timeout=REQUEST_TIMEOUT)  # fmt: skip
        assert created(registered), registered.text
        made = patient.post(
            f"{base}/reservations",
            headers={**owner, "Idempotency-Key": f"make-{node}"},
            timeout=REQUEST_TIMEOUT,
            json={"unitIds": [UNIT["id"]], "allowedOrgIds": ["org-lab"]},
        )
        assert made.status_code == 201, made.text
        cancelled = patient.post(
            f"{base}/reservations/{made.json()['id']}/cancel",
            headers={**owner, "Idempotency-Key": f"cancel-{node}"},
            json={},
            timeout=REQUEST_TIMEOUT,
        )
        assert cancelled.status_code == 200, cancelled.text


def test_a_follower_keeping_next_cursor_sees_every_event_written_on_several_nodes(
    demo: Stack,
) -> None:
    nodes = [f"node-follow-{n}" for n in range(1, 5)]
    _, cursor = _to_the_end(demo, None)
    writer = threading.Thread(target=_write_on_several_nodes, args=(demo, nodes))
    writer.start()
    seen: dict[str, dict[str, Any]] = {}
    deadline = time.monotonic() + WITHIN
    while writer.is_alive() or len(_on(seen.values(), nodes)) < 3 * len(nodes):
        assert time.monotonic() < deadline, f"seen {sorted(seen)}\n{demo.diagnostics()}"
        items, cursor = _to_the_end(demo, cursor)  # as a poller does, keeping the cursor
        seen |= {event["id"]: event for event in items}  # deduplicated by id
        time.sleep(0.5)
    writer.join()
    whole, _ = _to_the_end(demo, None)  # the whole feed, read again afterwards
    assert {e["id"] for e in _on(seen.values(), nodes)} == {e["id"] for e in _on(whole, nodes)}
    assert sorted(e["type"] for e in _on(whole, nodes)) == sorted(
        ["node.registered", "reservation.created", "reservation.cancelled"] * len(nodes)
    )


def _on(events: Any, nodes: list[str]) -> list[dict[str, Any]]:
    return [e for e in events if e["source"].removeprefix("/v1/nodes/") in nodes]
