"""Lambda entry point for GET /v1/webhooks."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from reservations.config import cursor_signing_key
from reservations.http import routes
from reservations.http.functions import api_function
from reservations.http.openapi import query_parameter
from reservations.http.resolver import current_caller
from reservations.logic.webhooks import list_subscriptions
from reservations.models.webhook_api import SubscriptionPage

function = api_function()
app, lambda_handler = function.app, function.lambda_handler


@function.route(routes.LIST_WEBHOOKS)
def get_page(
    # Plain strings: the logic checks them after the key (401 first) and the permission
    # (404 before 400). A parameter given empty is absent.
    limit: Annotated[str | None, Query(**query_parameter("limit"))] = None,
    cursor: Annotated[str | None, Query(**query_parameter("cursor"))] = None,
) -> SubscriptionPage:
    caller = current_caller(app)
    webhooks = function.ports.webhooks
    return list_subscriptions(caller, limit, cursor, webhooks, cursor_signing_key())
