"""Lambda entry point for GET /v1/nodes/{nodeId}/reservations/{id}."""

from reservations.http import routes
from reservations.http.functions import api_function
from reservations.http.resolver import current_caller
from reservations.logic.read_reservations import get_reservation
from reservations.models.api import ReservationView

function = api_function()
app, lambda_handler = function.app, function.lambda_handler


@function.route(routes.GET_RESERVATION)
def get_one(nodeId: str, reservationId: str) -> ReservationView:
    ports = function.ports
    return get_reservation(current_caller(app), nodeId, reservationId, ports.store, ports.clock())
