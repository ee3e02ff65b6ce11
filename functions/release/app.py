"""Lambda entry point for POST /v1/nodes/{nodeId}/reservations/{id}/release."""

from reservations.capacity.release import RELEASE
from reservations.kernel.http import routes
from reservations.kernel.http.functions import write_function

function = write_function(routes.RELEASE, RELEASE)
app, lambda_handler = function.app, function.lambda_handler
