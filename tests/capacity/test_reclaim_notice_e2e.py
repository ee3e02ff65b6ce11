"""A reclaim with notice through `make run`'s stack: the answer's terminateAt is the
request plus the notice, the unit is taken back at once (a spot placement on it is refused
during the notice), and the local node consumer, pretending the workload uses its whole
notice, reports it stopped at terminateAt: the unit is free after it, and soon after."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest
import requests

from tests.support.e2e import TIMINGS
from tests.support.stack import (
    BROKER,
    NODE,
    OPERATOR,
    REQUEST_TIMEOUT,
    Stack,
    run_stack,
    stack_fleet,
)

pytestmark = pytest.mark.e2e

SCHEDULER = "vl_local_test_notice_scheduler"
NOTICE = 5
FREE_WITHIN = 30  # seconds after terminateAt; the contract says "within a few seconds"
UNIT = "0000:04:00.0"  # vm-s1's, lent to the spot market


@pytest.fixture(scope="module")
def notice_stack(docker_ready: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    fleet = stack_fleet()
    fleet["apiKeys"].append(
        {"key": SCHEDULER, "orgId": "org-platform", "permissions": ["workload.place"]}
    )
    yield from run_stack(tmp_path_factory.mktemp("notice"), fleet, consumers=True)


def moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def unit_state(stack: Stack) -> tuple[str, datetime]:
    """The unit's state, and when the answer came (the read was before it)."""
    response = answered(lambda: stack.get_units(NODE, OPERATOR))
    assert response.status_code == 200, response.text
    [unit] = [u for u in response.json() if u["id"] == UNIT]
    return unit["state"], datetime.now(UTC)


def answered(send: Callable[[], requests.Response]) -> requests.Response:
    """The answer, asked again while it is a 503 (a Lambda container starting cold on a
    busy machine): what a client does on a 503 with its Retry-After."""
    for _ in range(10):
        response = send()
        if response.status_code != 503:
            return response
        time.sleep(float(response.headers.get("Retry-After", "1")))
    return response


def place_spot(stack: Stack, unit_id: str = UNIT) -> requests.Response:
    body = {"id": "vm-late", "kind": "vm", "tier": "spot", "orgId": "org-spotbuyer"}
    return answered(
        lambda: requests.post(
            f"{stack.api}/v1/nodes/{NODE}/workloads",
            headers={"Authorization": f"Bearer {SCHEDULER}"},
            json={**body, "unitIds": [unit_id]},
            timeout=REQUEST_TIMEOUT,
        )
    )


def get_workload(stack: Stack) -> requests.Response:
    return answered(
        lambda: requests.get(
            f"{stack.api}/v1/nodes/{NODE}/workloads/vm-s1",
            headers={"Authorization": OPERATOR},
            timeout=REQUEST_TIMEOUT,
        )
    )


def warm(stack: Stack) -> None:
    """Each function this test calls during the notice answers once before it starts, so
    that a cold start does not eat the five seconds."""
    assert get_workload(stack).json()["state"] == "running"
    assert place_spot(stack, "0000:0a:00.0").status_code == 422  # not sellable: no effect
    unit_state(stack)


def test_a_reclaim_with_notice_frees_the_unit_at_its_terminate_at(notice_stack: Stack) -> None:
    warm(notice_stack)
    response = notice_stack.reclaim(
        {"unitIds": [UNIT], "noticeSeconds": NOTICE, "reason": "lab at noon"}, BROKER
    )
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["terminated"] == ["vm-s1"]
    assert UNIT not in answer["releasedUnitIds"]
    terminate_at = moment(answer["terminateAt"])

    workload = get_workload(notice_stack)
    assert workload.status_code == 200, workload.text
    termination = workload.json()["termination"]
    assert termination["terminateAt"] == answer["terminateAt"]
    assert terminate_at - moment(termination["requestedAt"]) == timedelta(seconds=NOTICE)

    refused = place_spot(notice_stack)  # during the notice: the unit is taken back
    assert refused.status_code == 409, refused.text
    assert refused.json()["code"] == "units_unavailable"

    seen: list[tuple[str, datetime]] = []
    while True:
        state, answered = unit_state(notice_stack)
        seen.append((state, answered))
        if state == "free":
            break
        assert answered < terminate_at + timedelta(seconds=FREE_WITHIN), seen
        time.sleep(0.5)
    # Never before: every answer that came before terminateAt read the unit claimed.
    assert all(s == "claimed" for s, at in seen if at < terminate_at), seen
    assert answered >= terminate_at
    assert any(at < terminate_at for _, at in seen)  # it was looked at during the notice
    TIMINGS["terminateAt to unit free (make run, notice 5 s)"] = (
        answered - terminate_at
    ).total_seconds()
