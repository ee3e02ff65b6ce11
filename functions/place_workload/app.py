"""Lambda entry point for POST /v1/nodes/{nodeId}/workloads (the platform scheduler's)."""

from reservations.http import routes
from reservations.http.functions import write_function
from reservations.logic.workloads import PLACE

function = write_function(routes.PLACE_WORKLOAD, PLACE)
app, lambda_handler = function.app, function.lambda_handler
