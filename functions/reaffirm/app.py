"""Lambda entry point for POST /v1/nodes/{nodeId}/reservations/{id}/reaffirm."""

from reservations.http import routes
from reservations.http.functions import write_function
from reservations.logic.reaffirm import REAFFIRM

function = write_function(routes.REAFFIRM, REAFFIRM)
app, lambda_handler = function.app, function.lambda_handler
