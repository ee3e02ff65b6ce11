"""The webhook sender as deployed, in its Lambda container through `sam local invoke`,
against the AWS emulator, delivering to `devstack.webhook_receiver` on this machine: the
local allowance (a stack parameter, off by default) reaches the machine's receiver from the
container as host.docker.internal, and without it the same URL is never called."""

from __future__ import annotations

import base64
import io
import json
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from devstack.net import docker_bridge_address, free_port
from devstack.sqs_events import sqs_event
from devstack.webhook_receiver import serve
from reservations.kernel.aws.codec import from_attributes, to_attributes
from reservations.webhooks.models.domain import DeliveryRequest, SigningSecrets, Subscription
from reservations.webhooks.table.items import delivery_key, subscription_item
from tests.support.e2e import (
    LAMBDA_IMAGE,
    ROOT,
    Emulator,
    local_aws_environment,
    sam_env_vars,
    sam_executable,
)

pytestmark = pytest.mark.e2e

SECRET = "whsec_" + base64.b64encode(b"e" * 32).decode()


@pytest.fixture(scope="module")
def receiver() -> Iterator[tuple[int, io.StringIO]]:
    bridge = docker_bridge_address()
    assert bridge, "Docker's bridge (docker0) is where containers reach this machine"
    port, out = free_port(), io.StringIO()
    servers = serve(["127.0.0.1", bridge], port, [SECRET], out=out)
    yield port, out
    for server in servers:
        server.shutdown()
        server.server_close()


def subscribe_and_queue(emulator: Emulator, port: int, event_id: str) -> dict[str, Any]:
    """A subscription to the machine's receiver, and one delivery request for it, received
    from the queue as the event source mapping would hand it to the function."""
    subscription = Subscription(
        id="whsub-e2e", org_id="org-spotbuyer", url=f"http://127.0.0.1:{port}/hooks",
        secrets=SigningSecrets(SECRET), created_at=datetime.now(UTC),
    )  # fmt: skip
    emulator.client("dynamodb").put_item(
        TableName="ReservationsTable", Item=to_attributes(subscription_item(subscription))
    )
    body = json.dumps({"specversion": "1.0", "id": event_id, "type": "workload.terminated"})
    request = DeliveryRequest(
        subscriptionId="whsub-e2e", orgId="org-spotbuyer", eventId=event_id,
        eventType="workload.terminated", body=body,
    )  # fmt: skip
    sqs = emulator.client("sqs")
    url = sqs.get_queue_url(QueueName="WebhookDeliveryQueue")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody=request.to_json())
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)["Messages"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
    return sqs_event(messages, arn["QueueArn"])


def invoke_sender(event: dict[str, Any], emulator: Emulator, folder: Path, allow: bool) -> Any:
    env_vars = sam_env_vars(emulator.port, folder)
    overrides = json.loads(env_vars.read_text())
    overrides["Parameters"]["WEBHOOK_DELIVERY_QUEUE_URL"] = (
        f"http://host.docker.internal:{emulator.port}/123456789012/WebhookDeliveryQueue"
    )
    env_vars.write_text(json.dumps(overrides))
    (folder / "event.json").write_text(json.dumps(event))
    (folder / "tmp").mkdir(exist_ok=True)
    command = [
        *(sam_executable(), "local", "invoke", "WebhookSenderFunction"),
        *("-e", str(folder / "event.json"), "--env-vars", str(env_vars)),
        *("--invoke-image", LAMBDA_IMAGE, "--skip-pull-image"),
        *("--add-host", "host.docker.internal:host-gateway"),
        *(("--parameter-overrides", "WebhookAllowLocalReceiver=true") if allow else ()),
    ]
    result = subprocess.run(
        command, cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=180, check=False,
        env=local_aws_environment(AWS_ENDPOINT_URL_STS=emulator.endpoint,
                                  TMPDIR=str(folder / "tmp")),
    )  # fmt: skip
    assert result.returncode == 0, f"sam local invoke failed:\n{result.stdout}\n{result.stderr}"
    printed = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert printed, f"no response on stdout:\n{result.stdout}\n{result.stderr[-3000:]}"
    return json.loads(printed[-1])


def delivery_state(emulator: Emulator, event_id: str) -> str | None:
    item = emulator.client("dynamodb").get_item(
        TableName="ReservationsTable", Key=to_attributes(delivery_key("whsub-e2e", event_id))
    )
    return from_attributes(item["Item"])["state"] if "Item" in item else None


def test_with_the_allowance_the_machines_receiver_gets_a_verified_delivery(
    sam_built, demo_emulator, receiver, tmp_path
):
    port, out = receiver
    event = subscribe_and_queue(demo_emulator, port, "evt-e2e-1")
    answer = invoke_sender(event, demo_emulator, tmp_path, allow=True)
    assert answer == {"batchItemFailures": []}
    assert "evt-e2e-1  workload.terminated" in out.getvalue()
    assert "  signature: verified" in out.getvalue()
    assert delivery_state(demo_emulator, "evt-e2e-1") == "delivered"


def test_without_it_the_same_url_is_never_called(sam_built, demo_emulator, receiver, tmp_path):
    port, out = receiver
    event = subscribe_and_queue(demo_emulator, port, "evt-e2e-2")
    answer = invoke_sender(event, demo_emulator, tmp_path, allow=False)
    assert answer == {"batchItemFailures": [{"itemIdentifier": event["Records"][0]["messageId"]}]}
    assert "evt-e2e-2" not in out.getvalue()
    assert delivery_state(demo_emulator, "evt-e2e-2") == "pending"
