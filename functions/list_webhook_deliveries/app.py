"""Lambda entry point for GET /v1/webhooks/{id}/deliveries."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from reservations.kernel.http.functions import api_function
from reservations.kernel.http.openapi import query_parameter
from reservations.kernel.http.resolver import current_caller
from reservations.kernel.settings import cursor_signing_key
from reservations.webhooks import endpoints
from reservations.webhooks.deliveries import list_deliveries
from reservations.webhooks.models.domain import DeliveryPage
from reservations.webhooks.wiring import webhook_ports

function = api_function(webhook_ports())
app, lambda_handler = function.app, function.lambda_handler


@function.route(endpoints.LIST_DELIVERIES)
def get_page(
    subscriptionId: str,
    # Plain strings: the logic checks them after the key (401 first) and the permission
    # (404 before 400). A parameter given empty is absent.
    limit: Annotated[
        str | None, Query(**query_parameter(endpoints.LIST_DELIVERIES, "limit"))
    ] = None,
    cursor: Annotated[
        str | None, Query(**query_parameter(endpoints.LIST_DELIVERIES, "cursor"))
    ] = None,
) -> DeliveryPage:
    caller = current_caller(app)
    hooks = function.ports.webhooks
    return list_deliveries(caller, subscriptionId, limit, cursor, hooks, cursor_signing_key())
