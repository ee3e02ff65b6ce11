"""The local stack as a black-box user runs it: `python -m devstack.run` (= `make run`) with
a fleet file of the test's own, on free ports, stopped with Ctrl-C."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests

from devstack import fleet_documents as f
from devstack.containers import LOCAL_STACK_ENV, stack_containers
from devstack.net import free_port
from tests.support.e2e import (
    ROOT,
    TIMINGS,
    as_in_a_terminal,
    local_aws_environment,
    sam_build_once,
    tail,
)

NODE = "node-e2e-a"
OTHER_NODE = "node-e2e-b"
RESERVATION = "res-e2e"
RELEASED = ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0"]
OPERATOR, OWNER, BROKER, STRANGER = (
    f"Bearer {f.KEYS[role][0]}" for role in ("operator", "owner", "broker", "stranger")
)
EVENTS_KEY = "vl_local_test_owner_events"
READY = re.compile(r"make run: ready in (\d+) s\. API: (http://\S+)")
READY_TIMEOUT = 600  # the first start in a fresh checkout builds everything
REQUEST_TIMEOUT = 60  # a cold Lambda container on a busy small machine


REPEATABLE = {"GET", "HEAD", "PUT", "DELETE"}  # and any write with an Idempotency-Key


class Patient:
    """Requests to the local stack as the typed client sends them: a 503 (the stack could
    not answer in time: on a loaded machine sam local and the emulator are slower than
    Lambda and DynamoDB, and the service answers the contract's 503 with Retry-After) is
    sent again once after its Retry-After, when the request is safe to repeat: a GET, PUT
    or DELETE, or a POST or PATCH with an ``Idempotency-Key``. The 503 stays in the
    answer's ``history``, so a test can tell a create that committed on its first try
    (the repeat answers 200) from one that never did."""

    def request(self, method: str, url: str, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", REQUEST_TIMEOUT)
        answer = requests.request(method, url, **kwargs)
        keyed = "Idempotency-Key" in (kwargs.get("headers") or {})
        if answer.status_code != 503 or not (method in REPEATABLE or keyed):
            return answer
        time.sleep(float(answer.headers.get("Retry-After", "1")))
        again = requests.request(method, url, **kwargs)
        again.history = [answer, *again.history]
        return again

    def get(self, url: str, **kwargs: Any) -> requests.Response:
        return self.request("GET", url, **kwargs)

    def put(self, url: str, **kwargs: Any) -> requests.Response:
        return self.request("PUT", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> requests.Response:
        return self.request("POST", url, **kwargs)

    def delete(self, url: str, **kwargs: Any) -> requests.Response:
        return self.request("DELETE", url, **kwargs)


patient = Patient()


def created(answer: requests.Response) -> bool:
    """A create's answer: 201, or 200 when its first try was a 503 that had committed (the
    repeat finds what the first made, as a PUT or a replayed key answers)."""
    if answer.status_code == 201:
        return True
    return answer.status_code == 200 and any(h.status_code == 503 for h in answer.history)


def again_after_503(send: Callable[[], requests.Response]) -> requests.Response:
    """``send()``, and once more after a 503's Retry-After, as :class:`Patient` does. Only
    for requests safe to repeat."""
    answer = send()
    if answer.status_code == 503:
        time.sleep(float(answer.headers.get("Retry-After", "1")))
        again = send()
        again.history = [answer, *again.history]
        return again
    return answer


def post_keyed(url: str, headers: dict[str, str], body: Any, key: str) -> requests.Response:
    """A POST with an Idempotency-Key (which makes it safe to repeat: a second try replays
    the first if that one committed), sent again once after a 503."""
    keyed = {**headers, "Idempotency-Key": key, "Content-Type": "application/json"}
    return patient.post(url, headers=keyed, data=json.dumps(body))


def get_again_after_503(url: str, headers: dict[str, str], params: Any) -> requests.Response:
    """A GET, sent again once after a 503."""
    return patient.get(url, headers=headers, params=params)


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
    # The owner's org reads its event feed with this key.
    events_key = {"key": EVENTS_KEY, "orgId": "org-acme", "permissions": ["events.read"]}
    return f.fleet([node_a, node_b], extra_keys=[events_key])


@dataclass
class Stack:
    process: subprocess.Popen[str]
    api_port: int
    emulator_port: int
    stdout: Path
    stderr: Path
    id: str  # its containers' label (devstack.containers)
    logs: Path  # make run's LOCAL_DIR: the stack's logs, and sam local's temp dir (tmp/)
    children: set[int] = field(default_factory=set)

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def get_units(self, node_id: str, authorization: str | None) -> requests.Response:
        """List units, sent again once after a 503 (a loaded machine's emulator can be
        slower than the function's DynamoDB deadline: the contract's 503, which a client
        tries again after its Retry-After)."""
        headers = {} if authorization is None else {"Authorization": authorization}
        return get_again_after_503(
            f"{self.api}/v1/nodes/{node_id}/reservations/units", headers, None
        )

    def reclaim(self, body: dict[str, Any], authorization: str = BROKER) -> requests.Response:
        """A reclaim under a key of its own, so that a 503 is sent again (and replayed if
        its first try had committed)."""
        return post_keyed(
            f"{self.api}/v1/nodes/{NODE}/reservations/{RESERVATION}/reclaim",
            {"Authorization": authorization}, body, f"e2e-{uuid.uuid4()}",
        )  # fmt: skip

    def aws(self, service: str) -> Any:
        import boto3

        return boto3.client(
            service,
            endpoint_url=f"http://127.0.0.1:{self.emulator_port}",
            region_name="us-east-1",
            aws_access_key_id="local",
            aws_secret_access_key="local",
        )

    @property
    def sam_tmp(self) -> Path:
        return self.logs / "tmp"

    def diagnostics(self, lines: int = 25) -> str:
        """The last lines of make run's output and of each of the stack's logs."""
        parts = [("make run stdout", self.stdout), ("make run stderr", self.stderr)]
        parts += [(f"{name} ({what})", self.logs / name) for name, what in STACK_LOGS.items()]
        return "\n".join(
            f"--- {title}, last {lines} lines\n" + "\n".join(tail(path).splitlines()[-lines:])
            for title, path in parts
        )


# make run's logs (run.py), and what writes each.
STACK_LOGS = {
    "loop.log": "the pump and the node consumers",
    "sam.log": "sam local start-api",
    "sam-lambda.log": "sam local start-lambda: the functions AWS triggers",
    "sam-sender.log": "sam local start-lambda: the webhook sender",
    "emulator.log": "the AWS emulator",
}


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


def run_stack(
    directory: Path, fleet: dict[str, Any], consumers: bool, warm: str = "LAZY"
) -> Iterator[Stack]:
    """`python -m devstack.run` on free ports with ``fleet``, until the generator is closed.
    Its API functions start on their first request (``warm``): a session calls a few of the
    API's two dozen functions, each a second or so on its first call; the stack of
    ``test_local_stack.py`` starts them all, as ``make run`` does by default."""
    fleet_file = directory / "fleet.json"
    fleet_file.write_text(json.dumps(fleet, indent=2))
    api_port, emulator_port = free_port(), free_port()
    while emulator_port == api_port:
        emulator_port = free_port()
    cold = not (ROOT / ".aws-sam" / "build" / "template.yaml").exists()
    started = time.monotonic()
    built = sam_build_once()  # the run's one build: never while a stack reads .aws-sam/build
    if built is not None and built.returncode != 0:
        pytest.fail(f"sam build failed:\n{built.stdout[-4000:]}{built.stderr[-4000:]}")
    stdout, stderr = directory / "stdout.log", directory / "stderr.log"
    logs = directory / "local"  # the stack's own: several stacks may share the checkout
    stack_id = f"e2e-{uuid.uuid4().hex}"
    with stdout.open("w") as out, stderr.open("w") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "devstack.run"],
            cwd=ROOT,
            env=local_aws_environment(
                API_PORT=str(api_port),
                AWS_EMULATOR_PORT=str(emulator_port),
                FLEET=str(fleet_file),
                RUN_CONSUMERS="1" if consumers else "0",
                RUN_SAM_BUILD="0",
                LOCAL_DIR=str(logs),
                **{LOCAL_STACK_ENV: stack_id},
                API_WARM_CONTAINERS=warm,
            ),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            text=True,
            start_new_session=True,
            preexec_fn=as_in_a_terminal,  # its Ctrl-C must reach make run
        )
    stack = Stack(process, api_port, emulator_port, stdout, stderr, stack_id, logs)
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
        leftovers = stack_containers(stack_id)  # its own: other stacks may share the machine
        if leftovers:
            subprocess.run(["docker", "rm", "-f", *leftovers], capture_output=True, check=False)
