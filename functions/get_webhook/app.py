"""Lambda entry point for GET /v1/webhooks/{id}."""

from reservations.http import routes
from reservations.http.functions import api_function
from reservations.http.resolver import current_caller
from reservations.logic.webhooks import get_subscription
from reservations.models.webhook_api import SubscriptionView

function = api_function()
app, lambda_handler = function.app, function.lambda_handler


@function.route(routes.GET_WEBHOOK)
def get_one(subscriptionId: str) -> SubscriptionView:
    return get_subscription(current_caller(app), subscriptionId, function.ports.webhooks)
