"""Lambda entry point for DELETE /v1/nodes/{nodeId}/workloads/{workloadId} (the platform
scheduler's: the workload stopped on its own)."""

from reservations.kernel.http import routes
from reservations.kernel.http.functions import write_function
from reservations.workloads.scheduler import END

function = write_function(routes.END_WORKLOAD, END)
app, lambda_handler = function.app, function.lambda_handler
