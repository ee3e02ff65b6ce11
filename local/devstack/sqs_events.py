"""Lambda events as AWS's event sources deliver them: an SQS batch, a schedule tick."""

from __future__ import annotations

import time
from typing import Any

from devstack.emulator import REGION


def sqs_event(messages: list[dict[str, Any]], queue_arn: str) -> dict[str, Any]:
    """The event an SQS event source mapping hands the function for received messages."""
    now = str(int(time.time() * 1000))
    return {
        "Records": [
            {
                "messageId": message["MessageId"],
                "receiptHandle": message["ReceiptHandle"],
                "body": message["Body"],
                "attributes": {
                    "ApproximateReceiveCount": message.get("Attributes", {}).get(
                        "ApproximateReceiveCount", "1"
                    ),
                    "SentTimestamp": now,
                    "SenderId": "AIDAEXAMPLELOCAL",
                    "ApproximateFirstReceiveTimestamp": now,
                },
                "messageAttributes": {},
                "md5OfBody": message.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": REGION,
            }
            for message in messages
        ]
    }


def schedule_event() -> dict[str, Any]:
    """An EventBridge scheduled-rule tick."""
    return {
        "version": "0",
        "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "region": REGION,
        "resources": ["arn:aws:events:us-east-1:123456789012:rule/SweeperFunctionEveryMinute"],
        "detail": {},
    }


def failed_message_ids(response: dict[str, Any]) -> set[str]:
    """The records a partial-batch response asks to be retried."""
    return {failure["itemIdentifier"] for failure in response.get("batchItemFailures", [])}
