"""Fixtures of the node agent's tests: libvirt's built-in test hypervisor, SQS queues in
moto, and the in-process emulator the installed agent talks to."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import libvirt
import pytest
from moto import mock_aws

from tests.agent.support import domain_xml


class Hypervisor:
    """Domains on ``test:///default``: its state is shared by every connection of this
    process (the drivers' included) while one stays open, as this one does."""

    uri = "test:///default"

    def __init__(self) -> None:
        self.libvirt = libvirt
        self.conn = libvirt.open(self.uri)
        self.names: list[str] = []

    def running(self, on_poweroff: str = "destroy", transient: bool = False) -> str:
        """A new running domain (persistent unless ``transient``); its name."""
        name = f"vm-{uuid.uuid4().hex[:8]}"
        self.names.append(name)
        if transient:
            self.conn.createXML(domain_xml(name, on_poweroff))
        else:
            self.conn.defineXML(domain_xml(name, on_poweroff)).create()
        return name

    def state(self, name: str) -> tuple[int, int] | None:
        """(state, reason), or None when there is no such domain."""
        try:
            state, reason = self.conn.lookupByName(name).state()
        except self.libvirt.libvirtError as error:
            if error.get_error_code() != self.libvirt.VIR_ERR_NO_DOMAIN:
                raise
            return None
        return state, reason

    def clean(self) -> None:
        for name in self.names:
            if self.state(name) is None:
                continue
            domain = self.conn.lookupByName(name)
            if domain.isActive():
                domain.destroy()
            if domain.isPersistent():
                domain.undefine()
        self.conn.close()


@pytest.fixture
def hypervisor() -> Iterator[Hypervisor]:
    hypervisor = Hypervisor()
    yield hypervisor
    hypervisor.clean()


class Queues:
    """A node's FIFO queue and the reports queue, in moto."""

    def __init__(self) -> None:
        self.sqs = boto3.client("sqs", region_name="us-east-1")
        self.node = self.sqs.create_queue(
            QueueName="node-a.fifo",
            Attributes={"FifoQueue": "true", "VisibilityTimeout": "60"},
        )["QueueUrl"]
        self.reports = self.sqs.create_queue(QueueName="reports")["QueueUrl"]

    def send(self, termination: Any) -> None:
        self.sqs.send_message(
            QueueUrl=self.node,
            MessageBody=termination.to_json(),
            MessageGroupId=termination.workload_id,
            MessageDeduplicationId=termination.termination_id,
        )

    def sent_reports(self) -> list[dict[str, Any]]:
        messages = self.sqs.receive_message(QueueUrl=self.reports, MaxNumberOfMessages=10)
        return [json.loads(m["Body"]) for m in messages.get("Messages", [])]


@pytest.fixture
def queues(aws_env: None) -> Iterator[Queues]:
    with mock_aws():
        yield Queues()
