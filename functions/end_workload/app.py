"""Lambda entry point for DELETE /v1/nodes/{nodeId}/workloads/{workloadId} (the platform
scheduler's: the workload stopped on its own)."""

from reservations.kernel.http.functions import write_function
from reservations.workloads import endpoints
from reservations.workloads.wiring import workload_ports

function = write_function(endpoints.END_WORKLOAD, workload_ports())
app, lambda_handler = function.app, function.lambda_handler
