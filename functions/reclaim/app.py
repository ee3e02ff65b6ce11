"""Lambda entry point for POST /v1/nodes/{nodeId}/reservations/{id}/reclaim."""

from reservations.capacity.reclaim import RECLAIM
from reservations.kernel.http import routes
from reservations.kernel.http.functions import write_function

function = write_function(routes.RECLAIM, RECLAIM)
app, lambda_handler = function.app, function.lambda_handler
