"""Lambda entry point for POST /v1/webhooks/{id}/rotate-secret."""

from reservations.http import routes
from reservations.http.functions import write_function
from reservations.logic.webhooks import ROTATE_SECRET

function = write_function(routes.ROTATE_WEBHOOK_SECRET, ROTATE_SECRET)
app, lambda_handler = function.app, function.lambda_handler
