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
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.e2e.support import (
    ROOT,
    TIMINGS,
    docker_bridge_address,
    free_port,
    listening,
    local_aws_environment,
    sam_containers,
    tail,
)
from tests.support import fleets as f

pytestmark = pytest.mark.docker

NODE = "node-e2e-a"
OTHER_NODE = "node-e2e-b"
RESERVATION = "res-e2e"
RELEASED = ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0"]
OPERATOR, OWNER, BROKER, STRANGER = (
    f"Bearer {f.KEYS[role][0]}" for role in ("operator", "owner", "broker", "stranger")
)
READY = re.compile(r"make run: ready in (\d+) s\. API: (http://\S+)")
READY_TIMEOUT = 360  # the first start in a fresh checkout builds everything
REQUEST_TIMEOUT = 60  # a cold Lambda container on a busy 2-core machine


def stack_fleet() -> dict[str, Any]:
    """Two nodes; on the first, an active reservation lends three of its four units to the
    spot market, where a spot VM, a spot pod and an on-demand VM run."""
    node_a = f.node(
        NODE,
        units=[
            f.unit("0000:06:00.0"),
            f.unit("0000:04:00.0"),
            f.unit("0000:05:00.0"),
            f.unit("0000:07:00.0", sellableGpus=2),
            f.unit(
                "0000:0a:00.0",
                allocClass="host",
                sellable=False,
                notSellableReason="held for the host",
            ),
        ],
        reservations=[
            f.reservation(
                RESERVATION,
                ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0", "0000:07:00.0"],
                releasedUnitIds=RELEASED,
                contractRef="C-E2E",
            )
        ],
        workloads=[
            f.workload("vm-s1", ["0000:04:00.0"]),
            f.workload("pod-s2", ["0000:05:00.0"], kind="pod"),
            f.workload("vm-o1", ["0000:06:00.0"], tier="on-demand", orgId="org-walkin"),
            f.workload("vm-r1", ["0000:07:00.0"], tier="reserved", orgId="org-lab"),
        ],
    )
    node_b = f.node(
        OTHER_NODE,
        units=[
            f.unit("0000:17:00.0", allocClass="device-request"),
            f.unit("0000:18:00.0", allocClass="device-request"),
        ],
        workloads=[f.workload("pod-b1", ["0000:17:00.0"], kind="pod")],
        owner="org-globex",
    )
    return f.fleet([node_a, node_b])


def _default_sigint() -> None:
    # As in a terminal: Ctrl-C must reach make run even when whoever started pytest runs it
    # with SIGINT ignored (a background job of a non-interactive shell does).
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@dataclass
class Stack:
    process: subprocess.Popen[str]
    api_port: int
    emulator_port: int
    stdout: Path
    stderr: Path
    containers_before: set[str]
    sam_tmp: Path
    children: set[int] = field(default_factory=set)

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def get_units(self, node_id: str, authorization: str | None) -> requests.Response:
        headers = {} if authorization is None else {"Authorization": authorization}
        return requests.get(
            f"{self.api}/v1/nodes/{node_id}/reservations/units",
            headers=headers,
            timeout=REQUEST_TIMEOUT,
        )

    def reclaim(self, body: dict[str, Any], authorization: str = BROKER) -> requests.Response:
        return requests.post(
            f"{self.api}/v1/nodes/{NODE}/reservations/{RESERVATION}/reclaim",
            headers={"Authorization": authorization, "Content-Type": "application/json"},
            data=json.dumps(body),
            timeout=REQUEST_TIMEOUT,
        )

    def aws(self, service: str) -> Any:
        import boto3

        return boto3.client(
            service,
            endpoint_url=f"http://127.0.0.1:{self.emulator_port}",
            region_name="us-east-1",
            aws_access_key_id="local",
            aws_secret_access_key="local",
        )

    def diagnostics(self) -> str:
        return (
            f"--- make run stdout\n{tail(self.stdout)}\n--- make run stderr\n{tail(self.stderr)}"
            f"\n--- .local/sam.log\n{tail(ROOT / '.local' / 'sam.log')}"
        )


def children_of(pid: int) -> set[int]:
    """Direct children of ``pid`` (from /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture(scope="module")
def stack(docker_ready: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    directory = tmp_path_factory.mktemp("stack")
    fleet_file = directory / "fleet.json"
    fleet_file.write_text(json.dumps(stack_fleet(), indent=2))
    api_port, emulator_port = free_port(), free_port()
    while emulator_port == api_port:
        emulator_port = free_port()
    cold = not (ROOT / ".aws-sam" / "build" / "template.yaml").exists()
    stdout, stderr = directory / "stdout.log", directory / "stderr.log"
    sam_tmp = directory / "tmp"  # SAM keeps its image-build locks in the temp dir
    sam_tmp.mkdir()
    containers_before = sam_containers()
    started = time.monotonic()
    with stdout.open("w") as out, stderr.open("w") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "devstack.run"],
            cwd=ROOT,
            env=local_aws_environment(
                API_PORT=str(api_port),
                AWS_EMULATOR_PORT=str(emulator_port),
                FLEET=str(fleet_file),
                RUN_CONSUMERS="0",
                TMPDIR=str(sam_tmp),
            ),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            text=True,
            start_new_session=True,
            preexec_fn=_default_sigint,
        )
    stack = Stack(process, api_port, emulator_port, stdout, stderr, containers_before, sam_tmp)
    try:
        while not READY.search(tail(stdout, 100_000)):
            if process.poll() is not None:
                pytest.fail(f"make run exited ({process.returncode}):\n{stack.diagnostics()}")
            if time.monotonic() - started > READY_TIMEOUT:
                pytest.fail(f"make run not ready in {READY_TIMEOUT} s:\n{stack.diagnostics()}")
            time.sleep(0.5)
        label = "cold: first sam build here" if cold else "warm: sam build cached"
        TIMINGS[f"make run ready ({label})"] = time.monotonic() - started
        stack.children = children_of(process.pid)
        yield stack
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        # Never leave containers behind on a CI machine, even when the last test failed.
        leftovers = sam_containers() - containers_before
        if leftovers:
            subprocess.run(["docker", "rm", "-f", *leftovers], capture_output=True, check=False)


def assert_json(response: requests.Response) -> None:
    assert response.headers["Content-Type"] == "application/json"


def comparable(response: requests.Response) -> tuple[int, dict[str, str], bytes]:
    """Status, headers (but the clock's) and body bytes: what must not tell 404s apart."""
    headers = {k.lower(): v for k, v in response.headers.items() if k.lower() != "date"}
    return response.status_code, headers, response.content


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
    assert set(body) == {"error", "code"}
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
    assert first.json() == {"error": first.json()["error"], "code": "not_found"}
    for name, response in cases.items():
        assert comparable(response) == comparable(first), name


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
def real_reclaim(stack: Stack) -> requests.Response:
    """The reclaim of the three released units, done once for the tests that look at it."""
    return stack.reclaim({"unitIds": RELEASED, "reason": "lab needs its GPUs back (e2e)"})


def test_a_real_reclaim_terminates_spot_workloads_and_skips_the_rest(
    stack: Stack, real_reclaim: requests.Response
) -> None:
    assert real_reclaim.status_code == 200, real_reclaim.text
    assert_json(real_reclaim)
    body = real_reclaim.json()
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
    stack: Stack, real_reclaim: requests.Response
) -> None:
    assert real_reclaim.status_code == 200, real_reclaim.text
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
    containers = sorted(sam_containers() - stack.containers_before)
    if containers:
        problems.append(f"Lambda containers still there: {[c[:12] for c in containers]}")
    # An abandoned lock makes every later `sam local` on the machine wait 5 minutes for it.
    locks = sorted(lock.name for lock in stack.sam_tmp.glob("*.lock"))
    if locks:
        problems.append(f"SAM image-build locks left behind: {locks}")
    assert problems == [], "after Ctrl-C: " + "; ".join(problems)
