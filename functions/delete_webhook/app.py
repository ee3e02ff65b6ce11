"""Lambda entry point for DELETE /v1/webhooks/{id}."""

from reservations.kernel.http.functions import write_function
from reservations.webhooks import endpoints
from reservations.webhooks.wiring import webhook_ports

function = write_function(endpoints.DELETE_WEBHOOK, webhook_ports())
app, lambda_handler = function.app, function.lambda_handler
