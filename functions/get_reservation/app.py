"""Lambda entry point for GET /v1/nodes/{nodeId}/reservations/{id}."""

from aws_lambda_powertools.event_handler import Response

from reservations.kernel.http.functions import IF_NONE_MATCH, api_function, versioned_answer
from reservations.kernel.http.resolver import current_caller
from reservations.kernel.wire import response_json
from reservations.reservations import endpoints
from reservations.reservations.read import get_reservation
from reservations.reservations.wiring import reservation_ports

function = api_function(reservation_ports())
app, lambda_handler = function.app, function.lambda_handler


@function.route(endpoints.GET_RESERVATION)
def get_one(nodeId: str, reservationId: str, if_none_match: IF_NONE_MATCH = None) -> Response[str]:
    ports = function.ports
    view = get_reservation(current_caller(app), nodeId, reservationId, ports.store, ports.clock())
    return versioned_answer(response_json(view), view.etag, if_none_match)
