"""Lambda entry point for POST /v1/webhooks/{id}/rotate-secret."""

from reservations.kernel.http.functions import write_function
from reservations.webhooks import endpoints
from reservations.webhooks.wiring import webhook_ports

function = write_function(endpoints.ROTATE_WEBHOOK_SECRET, webhook_ports())
app, lambda_handler = function.app, function.lambda_handler
