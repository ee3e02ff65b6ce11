"""Lambda entry point for GET /v1/webhooks/{id}/deliveries/{eventId}."""

from reservations.kernel.http.functions import api_function
from reservations.kernel.http.resolver import current_caller
from reservations.webhooks import endpoints
from reservations.webhooks.deliveries import get_delivery
from reservations.webhooks.models.domain import DeliveryDetail
from reservations.webhooks.wiring import webhook_ports

function = api_function(webhook_ports())
app, lambda_handler = function.app, function.lambda_handler


@function.route(endpoints.GET_DELIVERY)
def get_one(subscriptionId: str, eventId: str) -> DeliveryDetail:
    caller = current_caller(app)
    return get_delivery(caller, subscriptionId, eventId, function.ports.webhooks)
