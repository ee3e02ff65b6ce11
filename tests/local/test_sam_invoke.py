"""`sam local invoke` with the shipped events (events/) against the demo fleet in the AWS
emulator: each function in the Lambda container, as deployed, with the status and body facts
the contract promises.

Each invocation costs a few seconds (SAM rebuilds the layer image every time), so every event
runs once and the results are shared.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.e2e import (
    DEMO_FLEET,
    LAMBDA_IMAGE,
    ROOT,
    TIMINGS,
    Emulator,
    local_aws_environment,
    sam_env_vars,
    sam_executable,
)

pytestmark = pytest.mark.e2e

FUNCTIONS = {
    "list_units": "ListUnitsFunction",
    "reclaim": "ReclaimFunction",
    "create_reservation": "CreateReservationFunction",
    "get_reservation": "GetReservationFunction",
    "list_reservations": "ListReservationsFunction",
    "release": "ReleaseFunction",
    "cancel": "CancelFunction",
    "node_events": "NodeEventsFunction",
    "org_events": "OrgEventsFunction",
}


@dataclass
class Invocation:
    status: int
    headers: dict[str, str]  # lower-case names
    body_text: str
    seconds: float

    @property
    def body(self) -> Any:
        return json.loads(self.body_text)


def sam_invoke(event: str, env_vars: Path, emulator: Emulator, sam_tmp: Path) -> Invocation:
    """`sam local invoke <Function> -e events/<event>.json`; the response it prints."""
    function = FUNCTIONS[event.split("/")[0]]
    started = time.monotonic()
    command = [
        *(sam_executable(), "local", "invoke", function, "-e", f"events/{event}.json"),
        *("--env-vars", str(env_vars), "--invoke-image", LAMBDA_IMAGE, "--skip-pull-image"),
        *("--add-host", "host.docker.internal:host-gateway"),
    ]
    try:
        result = subprocess.run(
            command,
            cwd=ROOT,
            env=local_aws_environment(
                # SAM asks STS for the account id before every invoke; with no AWS reachable
                # that costs ~6 s of retries, so let the emulator answer it.
                AWS_ENDPOINT_URL_STS=emulator.endpoint,
                # SAM's image-build lock lives in the temp dir; keep ours apart from other
                # SAM runs on the machine (a stale lock there blocks every build for 5 min).
                TMPDIR=str(sam_tmp),
            ),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
    except subprocess.TimeoutExpired as timeout:
        stderr = timeout.stderr.decode(errors="replace") if timeout.stderr else ""
        pytest.fail(f"sam local invoke {event} took over 180 s:\n{stderr[-3000:]}")
    seconds = time.monotonic() - started
    assert result.returncode == 0, f"sam local invoke failed:\n{result.stdout}\n{result.stderr}"
    printed = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert printed, f"no response on stdout:\n{result.stdout}\n{result.stderr[-3000:]}"
    response = json.loads(printed[-1])
    assert "statusCode" in response, f"not an HTTP response: {response}\n{result.stderr[-3000:]}"
    headers = {name.lower(): value for name, value in (response.get("headers") or {}).items()}
    return Invocation(response["statusCode"], headers, response.get("body") or "", seconds)


@pytest.fixture(scope="module")
def invoke(
    sam_built: None, demo_emulator: Emulator, tmp_path_factory: pytest.TempPathFactory
) -> Any:
    """Invoke an event once; later calls with the same event reuse the response."""
    directory = tmp_path_factory.mktemp("sam")
    env_vars = sam_env_vars(demo_emulator.port, directory)
    sam_tmp = directory / "tmp"
    sam_tmp.mkdir()
    seen: dict[str, Invocation] = {}

    def run(event: str) -> Invocation:
        if event not in seen:
            seen[event] = sam_invoke(event, env_vars, demo_emulator, sam_tmp)
            key = "sam local invoke (slowest)"
            TIMINGS[key] = max(TIMINGS.get(key, 0.0), seen[event].seconds)
        return seen[event]

    return run


def assert_contract_error(result: Invocation, status: int, code: str) -> None:
    assert result.status == status, result.body_text
    assert result.headers["content-type"] == "application/json"
    assert set(result.body) - {"details"} == {"error", "code", "requestId"}
    assert result.body["requestId"] == result.headers["x-request-id"]
    assert result.body["code"] == code
    assert isinstance(result.body["error"], str)
    assert result.body["error"]


# --- GET /v1/nodes/{nodeId}/reservations/units ------------------------------------------


def test_list_units_allowed_is_the_sorted_array_of_units(invoke: Any) -> None:
    result = invoke("list_units/allowed")
    assert result.status == 200, result.body_text
    assert result.headers["content-type"] == "application/json"
    units = result.body
    ids = [unit["id"] for unit in units]
    assert ids == sorted(ids)
    assert ids == [f"0000:{bus:02x}:00.0" for bus in range(4, 13)]
    by_id = {unit["id"]: unit for unit in units}
    assert by_id["0000:04:00.0"]["claimedBy"] == "vm:vm-17"
    assert by_id["0000:04:00.0"]["released"] is True
    assert by_id["0000:04:00.0"]["reservationId"] == "res-a-active"
    assert by_id["0000:0b:00.0"]["reservable"] is False
    assert "mig" in by_id["0000:0b:00.0"]["notReservableReason"]


def test_list_units_without_a_key_is_401_with_www_authenticate(invoke: Any) -> None:
    result = invoke("list_units/no_key")
    assert_contract_error(result, 401, "unauthorized")
    assert result.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize("event", ["list_units/stranger", "list_units/unknown_node"])
def test_list_units_404s_are_identical(invoke: Any, event: str) -> None:
    result = invoke(event)
    assert_contract_error(result, 404, "not_found")
    other = invoke(
        "list_units/unknown_node" if event.endswith("stranger") else "list_units/stranger"
    )
    # Identical but for each request's own id (X-Request-Id, and requestId in the body).
    assert (
        result.status,
        result.headers | {"x-request-id": ""},
        result.body | {"requestId": ""},
    ) == (
        other.status,
        other.headers | {"x-request-id": ""},
        other.body | {"requestId": ""},
    )


# --- POST /v1/nodes/{nodeId}/reservations/{id}/reclaim ----------------------------------


def test_reclaim_dry_run_reports_what_would_happen_and_sends_nothing(
    invoke: Any, demo_emulator: Emulator
) -> None:
    result = invoke("reclaim/dry_run")
    assert result.status == 200, result.body_text
    body = result.body
    assert body["id"] == "res-a-active"
    assert body["wouldTerminate"] == ["vm-17", "vm-18"]
    assert body["wouldSkip"] == ["vm-21"]
    assert "terminated" not in body
    assert "skipped" not in body
    assert "0000:04:00.0" in body["releasedUnitIds"]  # as it is: nothing changed
    sqs = demo_emulator.client("sqs")
    url = sqs.get_queue_url(QueueName="reservations-node-node-a1.fifo")["QueueUrl"]
    assert sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0).get("Messages", []) == []


def test_reclaim_with_a_typo_field_is_400(invoke: Any) -> None:
    result = invoke("reclaim/typo_field")
    assert_contract_error(result, 400, "invalid_request")


def test_reclaim_of_units_outside_the_reservation_is_422_naming_them(invoke: Any) -> None:
    result = invoke("reclaim/not_in_reservation")
    assert_contract_error(result, 422, "units_not_in_reservation")
    assert "0000:0b:00.0" in result.body["error"]


def test_reclaim_real_run_terminates_spot_and_skips_the_rest(
    invoke: Any, demo_emulator: Emulator
) -> None:
    demo_emulator.load_fleet(DEMO_FLEET)  # whatever ran before, start from the demo fleet
    result = invoke("reclaim/real_run")
    assert result.status == 200, result.body_text
    body = result.body
    assert body["terminated"] == ["vm-17", "vm-18"]
    assert body["skipped"] == ["vm-21"]
    assert "wouldTerminate" not in body
    assert body["releasedUnitIds"] == ["0000:06:00.0", "0000:09:00.0"]
    sqs = demo_emulator.client("sqs")
    url = sqs.get_queue_url(QueueName="reservations-node-node-a1.fifo")["QueueUrl"]
    workloads: set[str] = set()
    for _ in range(5):
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get(
            "Messages", []
        )
        for message in messages:
            workloads.add(json.loads(message["Body"])["workloadId"])
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        if workloads >= {"vm-17", "vm-18"}:
            break
    assert workloads == {"vm-17", "vm-18"}
