"""Lambda entry point for DELETE /v1/nodes/{nodeId}/workloads/{workloadId} (the platform
scheduler's: the workload stopped on its own)."""

from reservations.http import routes
from reservations.http.functions import write_function
from reservations.logic.workloads import END

function = write_function(routes.END_WORKLOAD, END)
app, lambda_handler = function.app, function.lambda_handler
