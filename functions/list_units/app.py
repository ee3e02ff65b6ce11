"""Lambda entry point for GET /v1/nodes/{nodeId}/reservations/units."""

from reservations.kernel.http.functions import api_function
from reservations.kernel.http.resolver import current_caller
from reservations.nodes import endpoints
from reservations.nodes.list_units import list_units
from reservations.nodes.models.views import UnitView
from reservations.nodes.wiring import node_ports

function = api_function(node_ports())
app, lambda_handler = function.app, function.lambda_handler


@function.route(endpoints.LIST_UNITS)
def get_units(nodeId: str) -> list[UnitView]:
    ports = function.ports
    return list_units(current_caller(app), nodeId, ports.store, ports.clock())
