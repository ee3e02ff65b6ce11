"""Lambda entry point for POST /v1/nodes/{nodeId}/reservations/{id}/cancel."""

from reservations.kernel.http.functions import write_function
from reservations.reservations import endpoints
from reservations.reservations.wiring import reservation_ports

function = write_function(endpoints.CANCEL, reservation_ports())
app, lambda_handler = function.app, function.lambda_handler
