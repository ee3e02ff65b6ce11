"""Lambda entry point for POST /v1/nodes/{nodeId}/reservations/{id}/reclaim."""

from reservations.http import routes
from reservations.http.functions import write_function
from reservations.logic.reclaim import RECLAIM

function = write_function(routes.RECLAIM, RECLAIM)
app, lambda_handler = function.app, function.lambda_handler
