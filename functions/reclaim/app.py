"""Lambda entry point for POST /v1/nodes/{nodeId}/reservations/{id}/reclaim."""

from reservations.capacity import endpoints
from reservations.capacity.wiring import capacity_ports
from reservations.kernel.http.functions import write_function

function = write_function(endpoints.RECLAIM, capacity_ports())
app, lambda_handler = function.app, function.lambda_handler
