"""Lambda entry point for GET /v1/reservations (every reservation the caller's org may see,
across the fleet)."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from reservations.kernel.http.functions import api_function
from reservations.kernel.http.openapi import comma_list, query_parameter
from reservations.kernel.http.resolver import current_caller
from reservations.kernel.settings import cursor_signing_key
from reservations.reservations import endpoints
from reservations.reservations.fleet import FleetQuery, list_fleet_reservations
from reservations.reservations.models import FleetReservationPage
from reservations.reservations.table.fleet import FleetIndexTable
from reservations.reservations.wiring import reservation_ports

function = api_function(reservation_ports())
app, lambda_handler = function.app, function.lambda_handler
index = FleetIndexTable()  # its client is made on first use, never at import
ROUTE = endpoints.LIST_FLEET_RESERVATIONS


@function.route(ROUTE)
def get_page(
    # Plain strings: the logic checks them after the key (401 first) and the permission
    # (404 before 400). A parameter given empty is absent.
    role: Annotated[list[str] | None, Query(**query_parameter(ROUTE, "role"))] = None,
    status: Annotated[list[str] | None, Query(**query_parameter(ROUTE, "status"))] = None,
    nodeId: Annotated[list[str] | None, Query(**query_parameter(ROUTE, "nodeId"))] = None,
    gpuModelId: Annotated[str | None, Query(**query_parameter(ROUTE, "gpuModelId"))] = None,
    endsBefore: Annotated[str | None, Query(**query_parameter(ROUTE, "endsBefore"))] = None,
    endsAfter: Annotated[str | None, Query(**query_parameter(ROUTE, "endsAfter"))] = None,
    limit: Annotated[str | None, Query(**query_parameter(ROUTE, "limit"))] = None,
    cursor: Annotated[str | None, Query(**query_parameter(ROUTE, "cursor"))] = None,
) -> FleetReservationPage:
    caller = current_caller(app)
    query = FleetQuery(
        role=comma_list(role),
        status=comma_list(status),
        node_id=comma_list(nodeId),
        gpu_model_id=gpuModelId,
        ends_before=endsBefore,
        ends_after=endsAfter,
        limit=limit,
        cursor=cursor,
    )
    return list_fleet_reservations(
        caller, query, index, cursor_signing_key(), function.ports.clock()
    )
