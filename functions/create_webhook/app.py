"""Lambda entry point for POST /v1/webhooks."""

from reservations.kernel.http.functions import write_function
from reservations.webhooks import endpoints
from reservations.webhooks.models.domain import new_subscription_id
from reservations.webhooks.settings import settings
from reservations.webhooks.wiring import webhook_ports

# The stack's local receiver allowance (http://127.0.0.1:<port>), read at each call.
route = endpoints.create_webhook(lambda: settings().webhook_allow_local_receiver)
function = write_function(route, webhook_ports(new_id=new_subscription_id))
app, lambda_handler = function.app, function.lambda_handler
