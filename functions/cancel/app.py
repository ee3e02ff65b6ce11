"""Lambda entry point for POST /v1/nodes/{nodeId}/reservations/{id}/cancel."""

from reservations.kernel.http import routes
from reservations.kernel.http.functions import write_function
from reservations.reservations.cancel import CANCEL

function = write_function(routes.CANCEL, CANCEL)
app, lambda_handler = function.app, function.lambda_handler
