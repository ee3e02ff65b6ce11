"""Lambda entry point for DELETE /v1/webhooks/{id}."""

from reservations.kernel.http import routes
from reservations.kernel.http.functions import write_function
from reservations.webhooks.subscriptions import UNSUBSCRIBE

function = write_function(routes.DELETE_WEBHOOK, UNSUBSCRIBE)
app, lambda_handler = function.app, function.lambda_handler
