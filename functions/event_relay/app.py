"""Lambda entry point for the table's DynamoDB Stream: relays each new event to the org
feeds, the event bus and the webhook delivery queue (partial batch failures; what fails
stays marked, and the scheduled relay takes it on)."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from reservations.events.relay import relay_stream
from reservations.events.table.feeds import RelayMarks, pending_event_from_stream
from reservations.events.table.outlets import DerivedEvents, EventBus, OrgFeeds
from reservations.kernel.observability import STREAM_BATCH, logger, metrics, tracer
from reservations.kernel.settings import check_settings
from reservations.usage.checkpoints import UsageCheckpoints
from reservations.usage.table import UsageTable
from reservations.webhooks.table.relay_outlet import WebhookOutlet

# Where every event must go (made at import: none opens a connection before use): the org
# feeds, the bus, the events derived from it (a node update's reviews, in its node feed),
# one webhook delivery queued per active subscription of each org that may see the event
# whose types take it, and the usage checkpoint of the event's node.
OUTLETS = (OrgFeeds(), EventBus(), DerivedEvents(), WebhookOutlet(), UsageCheckpoints(UsageTable()))
marks = RelayMarks()


@check_settings
@logger.inject_lambda_context(correlation_id_path=STREAM_BATCH)
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    sequence_numbers: dict[str, str] = {}
    pending = []
    for record in event.get("Records", []):
        new_event = pending_event_from_stream(record)
        if new_event is not None:
            pending.append(new_event)
            sequence_numbers.setdefault(new_event.stored.id, record["dynamodb"]["SequenceNumber"])
    result = relay_stream(pending, OUTLETS, marks)
    logger.info(
        "events relayed", extra={"relayed": len(result.relayed), "failed": len(result.failed)}
    )
    # The stream is retried from the first failure a few times (the event source mapping's
    # MaximumRetryAttempts); after that, the scheduled relay has them.
    return {
        "batchItemFailures": [
            {"itemIdentifier": sequence_numbers[event_id]} for event_id in sorted(result.failed)
        ]
    }
