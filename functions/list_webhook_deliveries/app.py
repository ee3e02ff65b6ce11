"""Lambda entry point for GET /v1/webhooks/{id}/deliveries."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from reservations.config import cursor_signing_key
from reservations.http import routes
from reservations.http.functions import api_function
from reservations.http.openapi import query_parameter
from reservations.http.resolver import current_caller
from reservations.logic.webhook_deliveries import list_deliveries
from reservations.models.webhooks import DeliveryPage

function = api_function()
app, lambda_handler = function.app, function.lambda_handler


@function.route(routes.LIST_DELIVERIES)
def get_page(
    subscriptionId: str,
    # Plain strings: the logic checks them after the key (401 first) and the permission
    # (404 before 400). A parameter given empty is absent.
    limit: Annotated[str | None, Query(**query_parameter("limit"))] = None,
    cursor: Annotated[str | None, Query(**query_parameter("cursor"))] = None,
) -> DeliveryPage:
    caller = current_caller(app)
    hooks = function.ports.webhooks
    return list_deliveries(caller, subscriptionId, limit, cursor, hooks, cursor_signing_key())
