"""`sam local invoke` of the event functions with the shipped events (events/) against the
demo fleet in the AWS emulator: each function in the Lambda container, as deployed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from devstack.events import WATCH_QUEUE, received
from tests.local.test_sam_invoke import Invocation, assert_contract_error, sam_invoke
from tests.support.e2e import (
    LAMBDA_IMAGE,
    ROOT,
    TIMINGS,
    Emulator,
    local_aws_environment,
    sam_env_vars,
    sam_executable,
)

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def sam(sam_built: None, demo_emulator: Emulator, tmp_path_factory: pytest.TempPathFactory) -> Any:
    directory: Path = tmp_path_factory.mktemp("sam-events")
    env_vars = sam_env_vars(demo_emulator.port, directory)
    sam_tmp = directory / "tmp"
    sam_tmp.mkdir()

    def http(event: str) -> Invocation:
        invocation = sam_invoke(event, env_vars, demo_emulator, sam_tmp)
        key = "sam local invoke (slowest)"
        TIMINGS[key] = max(TIMINGS.get(key, 0.0), invocation.seconds)
        return invocation

    def trigger(function: str, event: str) -> dict[str, Any]:
        """A function an event source triggers: what it returned."""
        result = subprocess.run(
            [
                *(sam_executable(), "local", "invoke", function, "-e", f"events/{event}.json"),
                *("--env-vars", str(env_vars), "--invoke-image", LAMBDA_IMAGE),
                *("--skip-pull-image", "--add-host", "host.docker.internal:host-gateway"),
            ],
            cwd=ROOT,
            env=local_aws_environment(
                AWS_ENDPOINT_URL_STS=demo_emulator.endpoint, TMPDIR=str(sam_tmp)
            ),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        printed = [line for line in result.stdout.splitlines() if line.startswith("{")]
        assert printed, result.stdout + result.stderr[-3000:]
        answer: dict[str, Any] = json.loads(printed[-1])
        return answer

    return http, trigger


def test_the_node_feed_answers_the_owner_and_404s_a_stranger(sam: Any) -> None:
    http, _ = sam
    owner = http("node_events/owner")
    assert owner.status == 200, owner.body_text
    assert owner.body["items"] == []  # loading a fleet makes no event
    assert owner.body["hasMore"] is False
    assert owner.body["nextCursor"]  # where the node's first events will be
    assert_contract_error(http("node_events/stranger"), 404, "not_found")


def test_the_org_feed_needs_events_read(sam: Any) -> None:
    http, _ = sam
    spot = http("org_events/spotbuyer")
    assert spot.status == 200, spot.body_text
    assert_contract_error(http("org_events/no_permission"), 404, "not_found")


def test_the_relay_puts_a_new_event_in_the_org_feeds_and_on_the_bus(
    sam: Any, demo_emulator: Emulator
) -> None:
    _, trigger = sam
    record = json.loads((ROOT / "events/event_relay/new_events.json").read_text())
    new_image = record["Records"][0]["dynamodb"]["NewImage"]
    dynamodb = demo_emulator.client("dynamodb")
    dynamodb.put_item(TableName="ReservationsTable", Item=new_image)  # what the record reports
    answer = trigger("EventRelayFunction", "event_relay/new_events")
    assert answer == {"batchItemFailures": []}
    event = json.loads(new_image["event"]["S"])
    sqs = demo_emulator.client("sqs")
    url = sqs.get_queue_url(QueueName=WATCH_QUEUE)["QueueUrl"]
    assert [e["id"] for e in received(sqs, url, wait=5)] == [event["id"]]
    broker = dynamodb.query(
        TableName="ReservationsTable",
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": "ORGEVT#org-broker"}},
    )["Items"]
    assert [json.loads(i["event"]["S"]) for i in broker if i["eventId"]["S"] == event["id"]] == [
        event
    ]
    assert (
        "unrelayed"
        not in dynamodb.get_item(  # settled: it reached every outlet
            TableName="ReservationsTable",
            Key={"PK": new_image["PK"], "SK": new_image["SK"]},
        )["Item"]
    )
    backlog = trigger("EventBacklogFunction", "event_backlog/scheduled")
    assert backlog["oldest_pending_seconds"] == 0
