"""Lambda entry point for GET /v1/nodes/{nodeId}/reservations/{id}."""

from reservations.kernel.http.functions import api_function
from reservations.kernel.http.resolver import current_caller
from reservations.nodes.models.views import ReservationView
from reservations.reservations import endpoints
from reservations.reservations.read import get_reservation
from reservations.reservations.wiring import reservation_ports

function = api_function(reservation_ports())
app, lambda_handler = function.app, function.lambda_handler


@function.route(endpoints.GET_RESERVATION)
def get_one(nodeId: str, reservationId: str) -> ReservationView:
    ports = function.ports
    return get_reservation(current_caller(app), nodeId, reservationId, ports.store, ports.clock())
