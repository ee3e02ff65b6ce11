"""Lambda entry point for POST /v1/nodes/{nodeId}/workloads (the platform scheduler's)."""

from reservations.kernel.http.functions import write_function
from reservations.workloads import endpoints
from reservations.workloads.wiring import workload_ports

function = write_function(endpoints.PLACE_WORKLOAD, workload_ports())
app, lambda_handler = function.app, function.lambda_handler
