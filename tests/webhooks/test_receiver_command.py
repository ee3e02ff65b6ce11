"""The receiver command people run beside the local stack: it prints each delivery and
whether its signature verifies."""

from __future__ import annotations

import base64
import io
import subprocess
import sys
from datetime import UTC, datetime

import pytest

from devstack.net import free_port, wait_for_port
from devstack.webhook_receiver import serve
from reservations.webhooks.egress.client import WebhookClient
from reservations.webhooks.rules.signing import delivery_headers

pytestmark = pytest.mark.allow_hosts(["127.0.0.1"])

SECRET = "whsec_" + base64.b64encode(b"r" * 32).decode()
OTHER = "whsec_" + base64.b64encode(b"o" * 32).decode()
BODY = '{"specversion":"1.0","id":"evt-7","type":"workload.termination_requested","subject":"workloads/vm-1"}'


def send(port: int, secrets: tuple[str, ...]) -> int | None:
    headers = delivery_headers(secrets, "evt-7", datetime.now(UTC), BODY)
    client = WebhookClient(allow_local=True)
    return client.post(f"http://127.0.0.1:{port}/", headers, BODY).status


def test_it_prints_each_delivery_and_whether_it_verifies():
    out = io.StringIO()
    port = free_port()
    servers = serve(["127.0.0.1"], port, [SECRET], out=out)
    try:
        assert send(port, (SECRET,)) == 200
        assert send(port, (OTHER,)) == 200
        assert send(port, (OTHER, SECRET)) == 200  # a rotation: either one verifies
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
    printed = out.getvalue()
    deliveries = printed.split("evt-7  workload.termination_requested  workloads/vm-1\n")[1:]
    assert [d.splitlines()[0] for d in deliveries] == [
        "  signature: verified",
        "  signature: NOT VERIFIED: No matching signature found",
        "  signature: verified",
    ]
    assert f"  body: {BODY}" in printed


def test_the_command_runs_and_answers_with_the_status_asked_for():
    port = free_port()
    command = [sys.executable, "-m", "devstack.webhook_receiver", "--port", str(port),
               "--secret", SECRET, "--status", "503"]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert wait_for_port(port, timeout=30, alive=lambda: process.poll() is None)
        assert send(port, (SECRET,)) == 503
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=30)
    assert f"receiving webhooks at http://127.0.0.1:{port}/ (answering 503)" in output
    assert "  signature: verified" in output
