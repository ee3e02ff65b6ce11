"""The agent as an operator installs it: ``pip install './agent[libvirt]'`` into a fresh venv
(no Lambda layer, no repository on its path), then one termination the API wrote, end to
end against the local AWS emulator: reclaim -> the installed agent stops the domain through
libvirt, with a notice and a grace period the guest ignores (the ACPI request a grace before
``terminateAt``, the destroy at it) -> its report frees the unit.

pip installs from its cache: the versions are constrained to requirements-dev.txt, which the
project's venv has just installed (libvirt-python's compiled wheel included).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from tests.agent import api_side
from tests.agent.support import domain_xml
from tests.support import state

ROOT = Path(__file__).resolve().parents[2]
NODE = "node-installed"


@pytest.fixture(scope="module")
def agent_venv(tmp_path_factory) -> Path:
    """A fresh venv with the agent and its libvirt extra installed from a copy of agent/."""
    work = tmp_path_factory.mktemp("installed")
    source = work / "agent"
    shutil.copytree(ROOT / "agent", source,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))  # fmt: skip
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    install = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
               "--disable-pip-version-check", "--constraint", str(ROOT / "requirements-dev.txt"),
               f"{source}[libvirt]"]  # fmt: skip
    done = subprocess.run(install, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return venv


def test_the_installed_command_runs_without_the_layer(agent_venv):
    helped = subprocess.run([str(agent_venv / "bin" / "spot-termination-agent"), "--help"],
                            capture_output=True, text=True, check=False)  # fmt: skip
    assert helped.returncode == 0, helped.stderr
    assert "--grace-seconds" in helped.stdout
    assert "libvirt" in helped.stdout
    layer = subprocess.run([str(agent_venv / "bin" / "python"), "-c", "import reservations"],
                           capture_output=True, cwd="/", check=False)  # fmt: skip
    assert layer.returncode != 0  # nothing of the API's package came along


def agent_command(venv: Path, emulator: str, queue: str, reports: str, work: Path) -> list[str]:
    return [str(venv / "bin" / "spot-termination-agent"), "--node-id", NODE,
            "--queue-url", queue, "--reports-queue-url", reports,
            "--endpoint-url", emulator, "--region", "us-east-1", "--wait-seconds", "1",
            "--driver", "libvirt", "--libvirt-uri", f"test://{work / 'node.xml'}",
            "--grace-seconds", "1", "--state-file", str(work / "done"),
            "--metrics-textfile", str(work / "spot_agent.prom")]  # fmt: skip


def wait_for_report(sqs, reports: str, agent: subprocess.Popen) -> None:
    """Until a report is on the queue (not received: the reports function reads it)."""
    for _ in range(120):
        assert agent.poll() is None, agent.communicate()
        attributes = sqs.get_queue_attributes(
            QueueUrl=reports, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        if int(attributes["ApproximateNumberOfMessages"]):
            return
        time.sleep(0.5)
    raise AssertionError("no report from the agent")


def test_one_message_end_to_end_through_the_installed_agent(
    agent_venv, emulator, emulated, load_emulated_fleet, tmp_path
):
    load_emulated_fleet(api_side.fleet_with_a_spot_workload(NODE, "vm-1"))
    functions = api_side.functions()
    # The node's hypervisor: vm-1 runs, and its guest ignores an ACPI shutdown.
    (tmp_path / "node.xml").write_text(f"<node>{domain_xml('vm-1', on_poweroff='restart')}</node>")
    sqs = emulated["sqs"]
    queue = state.node_queue_url(emulated["dynamodb"], NODE)
    reports = sqs.get_queue_url(QueueName="TerminationReportsQueue")["QueueUrl"]

    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as notify:
        notify.bind(str(tmp_path / "notify"))
        notify.settimeout(10)
        env = {**os.environ, "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
               "NOTIFY_SOCKET": str(tmp_path / "notify")}  # fmt: skip
        env.pop("AWS_ENDPOINT_URL", None)
        agent = subprocess.Popen(agent_command(agent_venv, emulator, queue, reports, tmp_path),
                                 env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)  # fmt: skip
        said: set[bytes] = set()
        try:
            while b"READY=1" not in said:  # the agent polls its queue from now on
                said.add(notify.recv(1024))
            # A notice of 5 s with a grace of 1 s: the ACPI request a second before
            # terminateAt, which the guest ignores, then the destroy at terminateAt.
            answer = api_side.reclaim(functions, NODE, notice_seconds=5)
            wait_for_report(sqs, reports, agent)
        finally:
            agent.send_signal(signal.SIGTERM)
            output, _ = agent.communicate(timeout=30)
        said.add(notify.recv(1024))  # a round's watchdog ping
    assert agent.returncode == 0, output
    assert {b"READY=1", b"WATCHDOG=1"} <= said

    [report] = [json.loads(body) for body in api_side.apply_reports(functions, sqs, reports)]
    assert (report["workloadId"], report["outcome"]) == ("vm-1", "terminated")
    terminate_at = datetime.fromisoformat(answer["terminateAt"])
    assert report["detail"] == f"domain vm-1 destroyed at terminateAt {terminate_at.isoformat()}"
    assert datetime.fromisoformat(report["reportedAt"]) >= terminate_at  # never before
    assert api_side.unit(functions, NODE)["state"] == "free"
    metrics = (tmp_path / "spot_agent.prom").read_text()
    assert 'spot_agent_outcomes_total{outcome="terminated"} 1.0' in metrics
    assert 'spot_agent_stop_duration_seconds_count{driver="libvirt"} 1.0' in metrics
