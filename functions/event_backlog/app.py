"""Lambda entry point for the scheduled relay of events still marked after a grace period
(whatever the stream's relay did not settle: an outage of any length, a crash)."""

from datetime import timedelta
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from reservations.events.relay import relay_backlog
from reservations.events.table.feeds import RelayMarks
from reservations.events.table.outlets import DerivedEvents, EventBus, OrgFeeds
from reservations.kernel.clock import utc_now
from reservations.kernel.observability import SCHEDULED_EVENT, logger, metrics, tracer
from reservations.kernel.settings import check_settings, settings
from reservations.usage.checkpoints import UsageCheckpoints
from reservations.usage.table import UsageTable
from reservations.webhooks.table.relay_outlet import WebhookOutlet

# The same outlets as the stream's relay (functions/event_relay).
OUTLETS = (OrgFeeds(), EventBus(), DerivedEvents(), WebhookOutlet(), UsageCheckpoints(UsageTable()))
marks = RelayMarks()


@check_settings
@logger.inject_lambda_context(correlation_id_path=SCHEDULED_EVENT)
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    counts = relay_backlog(
        utc_now(),
        timedelta(seconds=settings().event_relay_grace_seconds),
        marks,
        OUTLETS,
        time_left=lambda: context.get_remaining_time_in_millis() / 1000,
    )
    logger.info("event backlog pass done", extra=dict(counts))
    return dict(counts)
