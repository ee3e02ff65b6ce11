"""Lambda entry point for GET /v1/nodes/{nodeId}/reservations/units."""

from reservations.kernel.http import routes
from reservations.kernel.http.functions import api_function
from reservations.kernel.http.resolver import current_caller
from reservations.nodes.list_units import list_units
from reservations.nodes.models.views import UnitView

function = api_function()
app, lambda_handler = function.app, function.lambda_handler


@function.route(routes.LIST_UNITS)
def get_units(nodeId: str) -> list[UnitView]:
    ports = function.ports
    return list_units(current_caller(app), nodeId, ports.store, ports.clock())
