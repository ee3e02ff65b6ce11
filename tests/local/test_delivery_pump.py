"""The local stack's pump for the webhook delivery queue, over moto: a batch goes to the
sender as the event source mapping hands it, and only the messages the sender did not
report back are deleted (the others it holds until their next attempt)."""

from __future__ import annotations

import io
import json
from typing import Any

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError

from devstack.pump import DELIVERY_QUEUE, _reports_queue, pump_queue

pytestmark = pytest.mark.moto


class FakeLambda:
    """``start-lambda`` for one function: records each event, reports the first message."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def invoke(self, FunctionName: str, Payload: bytes) -> dict[str, Any]:
        event = json.loads(Payload)
        self.events.append((FunctionName, event))
        kept = [{"itemIdentifier": event["Records"][0]["messageId"]}]
        return {"Payload": io.BytesIO(json.dumps({"batchItemFailures": kept}).encode())}


def test_the_sender_gets_the_batch_and_what_it_reports_back_stays(aws):
    sqs = boto3.client("sqs")
    queue = _reports_queue(sqs, DELIVERY_QUEUE)
    for n in range(3):
        sqs.send_message(QueueUrl=queue[0], MessageBody=json.dumps({"n": n}))
    sender = FakeLambda()
    assert pump_queue(sqs, sender, "WebhookSenderFunction", queue, wait=0) == 2
    [(function, event)] = sender.events
    assert function == "WebhookSenderFunction"
    assert len(event["Records"]) == 3
    assert event["Records"][0]["eventSourceARN"] == queue[1]
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue[0], AttributeNames=["ApproximateNumberOfMessagesNotVisible",
                                           "ApproximateNumberOfMessages"]
    )["Attributes"]  # fmt: skip
    assert int(attributes["ApproximateNumberOfMessagesNotVisible"]) == 1
    assert int(attributes["ApproximateNumberOfMessages"]) == 0


class FailingLambda:
    """``start-lambda`` answering as it answers a failed invocation of a batch function."""

    def __init__(self, payload: bytes, function_error: bool = False) -> None:
        self.payload, self.function_error = payload, function_error

    def invoke(self, FunctionName: str, Payload: bytes) -> dict[str, Any]:
        answer: dict[str, Any] = {"Payload": io.BytesIO(self.payload)}
        if self.function_error:
            answer["FunctionError"] = "Unhandled"
        return answer


@pytest.mark.parametrize(
    ("payload", "function_error"),
    [
        # An unhandled error (the emulator timed out under the sender): sam local passes it
        # on as a payload and sets no FunctionError.
        (json.dumps({"errorMessage": "Read timeout", "errorType": "ReadTimeoutError"}), False),
        ("", False),  # cut short: no answer at all
        ("null", False),  # a handler that returned nothing
        (json.dumps({"errorMessage": "boom"}), True),
    ],
)
def test_a_failed_invocation_deletes_nothing_the_whole_batch_comes_back(
    aws, payload, function_error
):
    """Taken as success, such an answer deleted the batch: its webhook deliveries stayed
    pending with no attempt for good (a 5-minute soak found one)."""
    sqs = boto3.client("sqs")
    queue = _reports_queue(sqs, DELIVERY_QUEUE)
    for n in range(3):
        sqs.send_message(QueueUrl=queue[0], MessageBody=json.dumps({"n": n}))
    sender = FailingLambda(payload.encode(), function_error)
    assert pump_queue(sqs, sender, "WebhookSenderFunction", queue, wait=0) == 0
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue[0], AttributeNames=["ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    assert int(attributes["ApproximateNumberOfMessagesNotVisible"]) == 3  # back after the timeout


class DownLambda:
    """``start-lambda`` killed (``make soak``): nothing listens on its port."""

    def invoke(self, FunctionName: str, Payload: bytes) -> dict[str, Any]:
        raise EndpointConnectionError(endpoint_url="http://127.0.0.1:9")


def test_a_batch_whose_sam_local_is_down_deletes_nothing_and_comes_back(aws):
    """The pump's invocation cannot reach the function: the batch stays on its queue and
    comes back after its visibility timeout, to the sam local started again."""
    sqs = boto3.client("sqs")
    queue = _reports_queue(sqs, DELIVERY_QUEUE)
    for n in range(2):
        sqs.send_message(QueueUrl=queue[0], MessageBody=json.dumps({"n": n}))
    assert pump_queue(sqs, DownLambda(), "WebhookSenderFunction", queue, wait=0) == 0
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue[0], AttributeNames=["ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    assert int(attributes["ApproximateNumberOfMessagesNotVisible"]) == 2
