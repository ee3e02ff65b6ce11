"""GET /v1/reservations through `make run`'s stack (the demo fleet): the session of
docs/sessions.md run as written, and a reservation created through the API listed across
the fleet within seconds (the stream pump hands the table's stream to the fleet indexer)."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator

import pytest
import requests

from devstack import fleet_documents as f
from tests.support.e2e import TIMINGS
from tests.support.stack import REQUEST_TIMEOUT, Stack, patient, run_stack

pytestmark = pytest.mark.e2e
OWNER = {"Authorization": "Bearer vl_local_only_owner"}
BROKER = {"Authorization": "Bearer vl_local_only_broker"}
LISTED_WITHIN = 30  # seconds: the test's patience, not the promise (2 s locally)


@pytest.fixture(scope="module")
def demo_stack(docker_ready: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from run_stack(tmp_path_factory.mktemp("fleet"), f.demo_fleet(), consumers=False)


def _fleet(stack: Stack, query: str = "") -> requests.Response:
    return patient.get(f"{stack.api}/v1/reservations{query}", headers=BROKER,
                        timeout=REQUEST_TIMEOUT)  # fmt: skip


def _listed_within(stack: Stack, reservation_id: str) -> float:
    started = time.monotonic()
    while True:
        answer = _fleet(stack, "?limit=100")
        assert answer.status_code == 200, answer.text
        if reservation_id in [item["id"] for item in answer.json()["items"]]:
            return time.monotonic() - started
        assert time.monotonic() - started < LISTED_WITHIN, f"{reservation_id} never listed"
        time.sleep(0.2)


def test_a_created_reservation_is_listed_across_the_fleet_within_seconds(demo_stack):
    assert _fleet(demo_stack).status_code == 200  # the function started
    body = {"unitIds": ["0000:22:00.0"], "allowedOrgIds": ["org-lab"],
            "managingOrgIds": ["org-broker"], "endsAt": "2029-01-01T00:00:00Z"}  # fmt: skip
    keyed = {**OWNER, "Idempotency-Key": "fleet-e2e-create"}
    created = patient.post(f"{demo_stack.api}/v1/nodes/node-c3/reservations", headers=keyed,
                            data=json.dumps(body), timeout=REQUEST_TIMEOUT)  # fmt: skip
    assert created.status_code == 201, created.text
    TIMINGS["fleet: create to listed across the fleet (make run)"] = _listed_within(
        demo_stack, created.json()["id"]
    )


def test_the_brokers_fleet_session_answers_as_written(demo_stack):
    section = (f.ROOT / "docs" / "sessions.md").read_text().split(
        "## A broker's reservations across the fleet\n", 1)[1]  # fmt: skip
    commands = section.split("```bash\n", 1)[1].split("```", 1)[0]
    ran = subprocess.run(["bash", "-c", commands.replace("http://127.0.0.1:3000", demo_stack.api)],
                         capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    first, second, one_node, history, refused = _answers(ran.stdout)
    assert len(first["items"]) == 2
    assert first["nextCursor"]
    items = first["items"] + second["items"]
    ends = [item.get("endsAt", "~") for item in items]
    assert ends == sorted(ends)
    assert len({item["id"] for item in items}) == len(items)
    assert all("org-broker" in item["managingOrgIds"] for item in items)
    assert {item["nodeId"] for item in one_node["items"]} <= {"node-a1"}
    assert {item["status"] for item in history["items"]} <= {"cancelled", "expired"}
    assert (refused["code"], refused["details"][0]["field"]) == ("invalid_request", "status")


def _answers(text: str) -> list[dict]:
    """The JSON answers the session printed, one after another (curl adds no newline)."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while (at := len(text) - len(text[at:].lstrip())) < len(text):
        answer, at = decoder.raw_decode(text, at)
        found.append(answer)
    return found
