"""Lambda entry point for POST /v1/nodes/{nodeId}/workloads (the platform scheduler's)."""

from reservations.kernel.http import routes
from reservations.kernel.http.functions import write_function
from reservations.workloads.scheduler import PLACE

function = write_function(routes.PLACE_WORKLOAD, PLACE)
app, lambda_handler = function.app, function.lambda_handler
