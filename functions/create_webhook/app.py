"""Lambda entry point for POST /v1/webhooks."""

from reservations.config import settings
from reservations.http import routes
from reservations.http.functions import write_function
from reservations.logic.webhooks import subscribe_spec
from reservations.models.webhooks import new_subscription_id
from reservations.wiring import real_ports

# The stack's local receiver allowance (http://127.0.0.1:<port>), read at each call.
SUBSCRIBE = subscribe_spec(lambda: settings().webhook_allow_local_receiver)
function = write_function(routes.CREATE_WEBHOOK, SUBSCRIBE, real_ports(new_id=new_subscription_id))
app, lambda_handler = function.app, function.lambda_handler
