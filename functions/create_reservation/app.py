"""Lambda entry point for POST /v1/nodes/{nodeId}/reservations."""

from reservations.http import routes
from reservations.http.functions import write_function
from reservations.logic.create_reservation import CREATE, new_reservation_id
from reservations.wiring import real_ports

function = write_function(routes.CREATE_RESERVATION, CREATE, real_ports(new_id=new_reservation_id))
app, lambda_handler = function.app, function.lambda_handler
