"""Lambda entry point for GET /v1/nodes/{nodeId}/reservations/{id}."""

from reservations.kernel.http import routes
from reservations.kernel.http.functions import api_function
from reservations.kernel.http.resolver import current_caller
from reservations.nodes.models.views import ReservationView
from reservations.reservations.read import get_reservation

function = api_function()
app, lambda_handler = function.app, function.lambda_handler


@function.route(routes.GET_RESERVATION)
def get_one(nodeId: str, reservationId: str) -> ReservationView:
    ports = function.ports
    return get_reservation(current_caller(app), nodeId, reservationId, ports.store, ports.clock())
