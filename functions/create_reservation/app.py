"""Lambda entry point for POST /v1/nodes/{nodeId}/reservations."""

from reservations.kernel.http.functions import write_function
from reservations.reservations import endpoints
from reservations.reservations.create import new_reservation_id
from reservations.reservations.wiring import reservation_ports

function = write_function(
    endpoints.CREATE_RESERVATION, reservation_ports(new_id=new_reservation_id)
)
app, lambda_handler = function.app, function.lambda_handler
