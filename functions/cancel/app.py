"""Lambda entry point for POST /v1/nodes/{nodeId}/reservations/{id}/cancel."""

from reservations.kernel.http.functions import write_function
from reservations.nodes.wiring import node_ports
from reservations.reservations import endpoints

function = write_function(endpoints.CANCEL, node_ports())
app, lambda_handler = function.app, function.lambda_handler
