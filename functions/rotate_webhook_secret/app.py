"""Lambda entry point for POST /v1/webhooks/{id}/rotate-secret."""

from reservations.kernel.http import routes
from reservations.kernel.http.functions import write_function
from reservations.webhooks.subscriptions import ROTATE_SECRET

function = write_function(routes.ROTATE_WEBHOOK_SECRET, ROTATE_SECRET)
app, lambda_handler = function.app, function.lambda_handler
