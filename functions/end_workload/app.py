"""Lambda entry point for DELETE /v1/nodes/{nodeId}/workloads/{workloadId} (the platform
scheduler's: the workload stopped on its own)."""

from reservations.kernel.http.functions import write_function
from reservations.nodes.wiring import node_ports
from reservations.workloads import endpoints

function = write_function(endpoints.END_WORKLOAD, node_ports())
app, lambda_handler = function.app, function.lambda_handler
