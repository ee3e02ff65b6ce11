"""A node's spot-termination queue: its name, and the queue made (or found) when the node is
registered. The terminations slice sends to it by the same name."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from reservations.kernel.aws import clients
from reservations.nodes.settings import node_queue_settings

_QUEUE_NAME_MAX = 80
# The template's NodeQueuePrefix allows at most this much, which leaves 35 characters for
# the node's part of an 80-character queue name.
MAX_QUEUE_PREFIX = 40
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def node_queue_name(prefix: str, node_id: str) -> str:
    """``<prefix><nodeId>.fifo``; a node id SQS cannot take as is gets a hash suffix."""
    if not 0 < len(prefix) <= MAX_QUEUE_PREFIX or _UNSAFE.search(prefix):
        raise ValueError(f"queue prefix must be 1-{MAX_QUEUE_PREFIX} of A-Z a-z 0-9 _ -")
    safe = _UNSAFE.sub("-", node_id)
    room = _QUEUE_NAME_MAX - len(prefix) - len(".fifo")
    if safe != node_id or len(safe) > room:
        digest = hashlib.sha256(node_id.encode()).hexdigest()[:12]
        safe = f"{safe[: room - 13]}-{digest}"
    return f"{prefix}{safe}.fifo"


def ensure_node_queue(sqs: Any, prefix: str, node_id: str, dead_letter_arn: str) -> str:
    """Create (or find) the node's FIFO queue, redriving to the shared dead-letter queue."""
    attributes = {
        "FifoQueue": "true",
        # De-duplication by termination id (MessageDeduplicationId), not by content.
        "ContentBasedDeduplication": "false",
        "VisibilityTimeout": "60",
        "MessageRetentionPeriod": str(4 * 24 * 3600),
        "ReceiveMessageWaitTimeSeconds": "20",
        "RedrivePolicy": json.dumps(
            {"deadLetterTargetArn": dead_letter_arn, "maxReceiveCount": "5"}
        ),
    }
    response = sqs.create_queue(QueueName=node_queue_name(prefix, node_id), Attributes=attributes)
    return str(response["QueueUrl"])


def make_node_queue(node_id: str) -> str:
    """The node's spot-termination queue, made if missing (CreateQueue is idempotent)."""
    prefix, dead_letter_arn = node_queue_settings()
    return ensure_node_queue(clients.sqs(), prefix, node_id, dead_letter_arn)
