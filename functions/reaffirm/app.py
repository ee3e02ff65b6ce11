"""Lambda entry point for POST /v1/nodes/{nodeId}/reservations/{id}/reaffirm."""

from reservations.kernel.http import routes
from reservations.kernel.http.functions import write_function
from reservations.reservations.reaffirm import REAFFIRM

function = write_function(routes.REAFFIRM, REAFFIRM)
app, lambda_handler = function.app, function.lambda_handler
