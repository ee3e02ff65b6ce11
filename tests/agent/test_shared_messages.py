"""One message schema for the API and the agent: the API's own message, as the reclaim
function writes it, is read by the agent's model, stops a real (test-driver) domain through
libvirt, and the agent's report frees the units through the API's reports function."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import boto3
import libvirt
import pytest

import reservations.nodes.models.partition
import reservations.terminations.models
import termination_messages
from node_agent.consumer import Consumer
from node_agent.libvirt_driver import LibvirtDriver
from tests.agent import api_side
from tests.support import state

pytestmark = pytest.mark.moto

ROOT = Path(__file__).resolve().parents[2]


def test_the_api_and_the_agent_use_the_same_classes():
    assert reservations.terminations.models.SpotTermination is termination_messages.SpotTermination
    assert (
        reservations.terminations.models.TerminationReport is termination_messages.TerminationReport
    )
    assert reservations.nodes.models.partition.WorkloadKind is termination_messages.WorkloadKind


def test_the_message_models_are_defined_once_and_the_layer_links_them():
    defined = [
        path.relative_to(ROOT)
        for top in ("agent", "layers", "functions", "local", "tools")
        for path in (ROOT / top).rglob("*.py")
        if "shared" not in path.relative_to(ROOT).parts  # the layer's link to the same files
        and any(
            isinstance(node, ast.ClassDef) and node.name in ("SpotTermination", "TerminationReport")
            for node in ast.walk(ast.parse(path.read_text()))
        )
    ]
    assert defined == [Path("agent/termination_messages/__init__.py")]
    link = ROOT / "layers/common/shared/termination_messages"
    assert link.is_symlink()
    assert link.resolve() == (ROOT / "agent/termination_messages").resolve()
    assert (
        'cp -RL "$(HERE)shared/termination_messages"'
        in (ROOT / "layers/common/Makefile").read_text()
    )


def test_the_apis_message_stops_the_domain_and_the_report_frees_the_units(
    aws, load_fleet, hypervisor
):
    name = hypervisor.running(on_poweroff="restart")
    load_fleet(api_side.fleet_with_a_spot_workload("node-a", name))
    functions = api_side.functions()
    assert api_side.reclaim(functions, "node-a")["terminated"] == [name]

    sqs = boto3.client("sqs")
    queue = state.node_queue_url(aws, "node-a")
    reports = sqs.get_queue_url(QueueName="TerminationReportsQueue")["QueueUrl"]
    [message] = sqs.receive_message(QueueUrl=queue, VisibilityTimeout=0)["Messages"]
    read = termination_messages.SpotTermination.model_validate_json(message["Body"])
    assert (read.workload_id, read.workload_kind, read.unit_ids) == (name, "vm", [api_side.UNIT])

    driver = LibvirtDriver(hypervisor.uri)
    consumer = Consumer(sqs, "node-a", queue, reports, driver, wait_seconds=0)
    assert consumer.poll_once() == 1
    assert hypervisor.state(name) == (
        libvirt.VIR_DOMAIN_SHUTOFF,
        libvirt.VIR_DOMAIN_SHUTOFF_DESTROYED,
    )
    [report] = api_side.apply_reports(functions, sqs, reports)
    assert json.loads(report)["outcome"] == "terminated"
    assert api_side.unit(functions, "node-a")["state"] == "free"
    assert consumer.poll_once() == 0  # deleted once done
