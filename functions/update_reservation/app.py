"""Lambda entry point for PATCH /v1/nodes/{nodeId}/reservations/{id}."""

from reservations.kernel.http.functions import write_function
from reservations.reservations import endpoints
from reservations.reservations.wiring import reservation_ports

function = write_function(endpoints.UPDATE_RESERVATION, reservation_ports())
app, lambda_handler = function.app, function.lambda_handler
