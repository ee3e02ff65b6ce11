"""Lambda entry point for the webhook delivery queue (SQS, partial batch failures): each
message is one event for one subscription; the ones reported back stay on the queue, held
until their next attempt."""

from functools import cache
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError

from reservations.kernel.clock import utc_now
from reservations.kernel.observability import SQS_BATCH, logger, metrics, tracer
from reservations.kernel.settings import check_settings
from reservations.webhooks.egress.client import WebhookClient
from reservations.webhooks.models.domain import DeliveryRequest
from reservations.webhooks.sender import ReceivedMessage, SenderPorts, deliver_batch
from reservations.webhooks.settings import settings
from reservations.webhooks.table.deliveries import DeliveryQueue, DeliveryTable


@cache
def ports() -> SenderPorts:
    """The table, the queue and the network; made on first use, never at import."""
    config = settings()
    client = WebhookClient(
        allow_local=config.webhook_allow_local_receiver,
        local_receiver_host=config.webhook_local_receiver_host,
    )
    return SenderPorts(store=DeliveryTable(), queue=DeliveryQueue(), client=client, now=utc_now)


def received(record: dict[str, Any]) -> ReceivedMessage:
    try:
        request: DeliveryRequest | None = DeliveryRequest.model_validate_json(record["body"])
    except ValidationError:
        request = None
    return ReceivedMessage(record["messageId"], record["receiptHandle"], request)


@check_settings
@logger.inject_lambda_context(correlation_id_path=SQS_BATCH)
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    messages = [received(record) for record in event.get("Records", [])]
    kept = deliver_batch(messages, ports())
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in kept]}
