"""The whole loop through `make run`: reclaim -> message -> node consumer -> report ->
units free, while non-spot and unrelated workloads stay untouched."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.support.e2e import TIMINGS
from tests.support.stack import BROKER, NODE, OPERATOR, OTHER_NODE, Stack, run_stack, stack_fleet

pytestmark = pytest.mark.e2e
FREE_WITHIN = 30  # seconds; the contract says "within a few seconds", this is the test's patience


@pytest.fixture(scope="module")
def loop_stack(docker_ready: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from run_stack(tmp_path_factory.mktemp("loop"), stack_fleet(), consumers=True)


def units(stack: Stack, node_id: str) -> dict[str, dict]:
    response = stack.get_units(node_id, OPERATOR)
    assert response.status_code == 200, response.text
    return {unit["id"]: unit for unit in response.json()}


def test_a_reclaim_through_the_local_api_frees_the_units_within_seconds(loop_stack: Stack) -> None:
    before_other = units(loop_stack, OTHER_NODE)
    response = loop_stack.reclaim(
        {"unitIds": ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0"]}, BROKER
    )
    assert response.status_code == 200, response.text
    assert response.json()["terminated"] == ["pod-s2", "vm-s1"]
    assert response.json()["skipped"] == ["vm-o1"]
    started = time.monotonic()
    while True:
        now = units(loop_stack, NODE)
        if now["0000:04:00.0"]["state"] == "free" and now["0000:05:00.0"]["state"] == "free":
            break
        assert time.monotonic() - started < FREE_WITHIN, now
        time.sleep(0.5)
    TIMINGS["reclaim to units free (make run, consumers on)"] = time.monotonic() - started
    assert "claimedBy" not in now["0000:04:00.0"]
    # The on-demand VM and the reserved VM are untouched, and so is the other node.
    assert now["0000:06:00.0"]["claimedBy"] == "vm:vm-o1"
    assert now["0000:07:00.0"]["claimedBy"] == "vm:vm-r1"
    assert units(loop_stack, OTHER_NODE) == before_other
