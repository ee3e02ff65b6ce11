"""Lambda entry point for POST /v1/webhooks/{id}/deliveries/{eventId}/retry."""

from aws_lambda_powertools.event_handler import Response

from reservations.kernel.http.functions import IDEMPOTENCY_KEY, answer, api_function
from reservations.kernel.http.resolver import current_caller
from reservations.webhooks import endpoints
from reservations.webhooks.deliveries import retry_delivery
from reservations.webhooks.wiring import webhook_ports

function = api_function(webhook_ports())
app, lambda_handler = function.app, function.lambda_handler


@function.route(endpoints.RETRY_DELIVERY)
def retry(
    subscriptionId: str, eventId: str, idempotency_key: IDEMPOTENCY_KEY = None
) -> Response[str]:
    ports = function.ports
    outcome = retry_delivery(
        current_caller(app),
        subscriptionId,
        eventId,
        idempotency_key,
        ports.webhooks,
        ports.queue_delivery,
        ports.clock(),
    )
    return answer(outcome)
