"""Lambda entry point for POST /v1/nodes/{nodeId}/reservations."""

from reservations.kernel.http import routes
from reservations.kernel.http.functions import write_function
from reservations.kernel.wiring import real_ports
from reservations.reservations.create import CREATE, new_reservation_id

function = write_function(routes.CREATE_RESERVATION, CREATE, real_ports(new_id=new_reservation_id))
app, lambda_handler = function.app, function.lambda_handler
