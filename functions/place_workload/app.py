"""Lambda entry point for POST /v1/nodes/{nodeId}/workloads (the platform scheduler's)."""

from reservations.kernel.http.functions import write_function
from reservations.nodes.wiring import node_ports
from reservations.workloads import endpoints

function = write_function(endpoints.PLACE_WORKLOAD, node_ports())
app, lambda_handler = function.app, function.lambda_handler
