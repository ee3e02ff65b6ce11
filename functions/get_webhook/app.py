"""Lambda entry point for GET /v1/webhooks/{id}."""

from reservations.kernel.http.functions import api_function
from reservations.kernel.http.resolver import current_caller
from reservations.webhooks import endpoints
from reservations.webhooks.models.api import SubscriptionView
from reservations.webhooks.subscriptions import get_subscription
from reservations.webhooks.wiring import webhook_ports

function = api_function(webhook_ports())
app, lambda_handler = function.app, function.lambda_handler


@function.route(endpoints.GET_WEBHOOK)
def get_one(subscriptionId: str) -> SubscriptionView:
    return get_subscription(current_caller(app), subscriptionId, function.ports.webhooks)
