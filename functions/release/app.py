"""Lambda entry point for POST /v1/nodes/{nodeId}/reservations/{id}/release."""

from reservations.http import routes
from reservations.http.functions import write_function
from reservations.logic.release import RELEASE

function = write_function(routes.RELEASE, RELEASE)
app, lambda_handler = function.app, function.lambda_handler
