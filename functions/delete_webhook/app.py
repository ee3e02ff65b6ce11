"""Lambda entry point for DELETE /v1/webhooks/{id}."""

from reservations.http import routes
from reservations.http.functions import write_function
from reservations.logic.webhooks import UNSUBSCRIBE

function = write_function(routes.DELETE_WEBHOOK, UNSUBSCRIBE)
app, lambda_handler = function.app, function.lambda_handler
