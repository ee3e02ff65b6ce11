"""The per-node spot-termination queues: naming, creating, sending in batches."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from reservations.kernel.aws import clients
from reservations.terminations.models import SendResult, SpotTermination
from reservations.terminations.settings import node_queue_settings

__all__ = ["SendResult", "ensure_node_queue", "node_queue_name", "send_termination"]

SQS_BATCH = 10
_SEND_ATTEMPTS = 3
_QUEUE_NAME_MAX = 80
# The template's NodeQueuePrefix allows at most this much, which leaves 35 characters for
# the node's part of an 80-character queue name.
MAX_QUEUE_PREFIX = 40
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
# What SQS answers when the queue is not there (JSON and query protocols).
_NO_QUEUE = frozenset({"QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue"})


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


def send_terminations(
    queue_url: str,
    messages: Sequence[SpotTermination],
    deduplication_ids: Mapping[str, str] | None = None,
    group_ids: Mapping[str, str] | None = None,
) -> set[str]:
    """Send in batches of ten, retrying failed entries; the termination ids that went out.

    The de-duplication id is the termination id, unless ``deduplication_ids`` names another
    (a redelivery must not be swallowed by the queue's five-minute de-duplication window).
    Never raises for SQS trouble, and stops at the first request SQS does not answer: on the
    request path the time is the caller's, and what was not sent stays open on the
    workload's item, where the sweeper finds it.
    """
    sqs = clients.sqs()
    sent: set[str] = set()
    for start in range(0, len(messages), SQS_BATCH):
        batch = messages[start : start + SQS_BATCH]
        ids = _SendIds(deduplication_ids or {}, group_ids or {})
        answered = _send_batch(sqs, queue_url, batch, ids, sent)
        if not answered:
            break
    return sent


def _send_batch(
    sqs: Any,
    queue_url: str,
    batch: Sequence[SpotTermination],
    dedup: _SendIds,
    sent: set[str],
) -> bool:
    """One batch, failed entries tried again (``_SEND_ATTEMPTS`` in all), adding what went
    out to ``sent``; False when SQS did not answer, so that nothing more is tried."""
    pending = {m.termination_id: m for m in batch}
    for _ in range(_SEND_ATTEMPTS):
        if not pending:
            break
        ids = list(pending)
        try:
            response = sqs.send_message_batch(
                QueueUrl=queue_url, Entries=_entries(list(pending.values()), dedup)
            )
        except (BotoCoreError, ClientError):  # SQS is unwell: the sweeper sends the rest
            return False
        for success in response.get("Successful", []):
            termination_id = ids[int(success["Id"])]
            sent.add(termination_id)
            pending.pop(termination_id, None)
    return True


@dataclass(frozen=True)
class _SendIds:
    """The de-duplication ids and groups of the messages that do not take the defaults."""

    deduplication: Mapping[str, str]
    group: Mapping[str, str]


def _entries(messages: list[SpotTermination], ids: _SendIds) -> list[dict[str, str]]:
    return [
        {
            "Id": str(index),
            "MessageBody": message.to_json(),
            "MessageGroupId": ids.group.get(message.termination_id, message.workload_id),
            "MessageDeduplicationId": ids.deduplication.get(
                message.termination_id, message.termination_id
            ),
        }
        for index, message in enumerate(messages)
    ]


def send_termination(
    queue_url: str,
    message: SpotTermination,
    deduplication_id: str,
    sqs: Any = None,
    *,
    group_id: str | None = None,
) -> SendResult:
    """One send; only ``ACCEPTED`` means SQS took the message (an outage is not a delivery)."""
    client = sqs or clients.sqs()
    try:
        client.send_message(
            QueueUrl=queue_url,
            MessageBody=message.to_json(),
            MessageGroupId=group_id or message.workload_id,
            MessageDeduplicationId=deduplication_id,
        )
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in _NO_QUEUE:
            return SendResult.NO_QUEUE
        return SendResult.FAILED
    except BotoCoreError:
        return SendResult.FAILED
    return SendResult.ACCEPTED


def make_node_queue(node_id: str) -> str:
    """The node's spot-termination queue, made if missing (CreateQueue is idempotent)."""
    prefix, dead_letter_arn = node_queue_settings()
    return ensure_node_queue(clients.sqs(), prefix, node_id, dead_letter_arn)
