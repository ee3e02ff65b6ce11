"""Lambda entry point for GET /v1/nodes/{nodeId}/reservations."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from reservations.kernel.http.functions import api_function
from reservations.kernel.http.openapi import comma_list, query_parameter
from reservations.kernel.http.resolver import current_caller
from reservations.kernel.settings import cursor_signing_key
from reservations.nodes.models.views import ReservationPage
from reservations.reservations import endpoints
from reservations.reservations.read import (
    ListQuery,
    list_reservations,
)
from reservations.reservations.wiring import reservation_ports

function = api_function(reservation_ports())
app, lambda_handler = function.app, function.lambda_handler


@function.route(endpoints.LIST_RESERVATIONS)
def get_page(
    nodeId: str,
    # Plain strings here: the logic checks them after the key (401 before 400); the
    # document declares what the logic accepts (``ApiRoute.query``).
    limit: Annotated[
        str | None, Query(**query_parameter(endpoints.LIST_RESERVATIONS, "limit"))
    ] = None,
    cursor: Annotated[
        str | None, Query(**query_parameter(endpoints.LIST_RESERVATIONS, "cursor"))
    ] = None,
    status: Annotated[
        list[str] | None, Query(**query_parameter(endpoints.LIST_RESERVATIONS, "status"))
    ] = None,
) -> ReservationPage:
    caller, ports = current_caller(app), function.ports
    query = ListQuery(limit=limit, cursor=cursor, status=comma_list(status))
    return list_reservations(
        caller, nodeId, query, ports.store, cursor_signing_key(), ports.clock()
    )
