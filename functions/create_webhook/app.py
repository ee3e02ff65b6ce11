"""Lambda entry point for POST /v1/webhooks."""

from reservations.kernel.http import routes
from reservations.kernel.http.functions import write_function
from reservations.kernel.settings import settings
from reservations.kernel.wiring import real_ports
from reservations.webhooks.models.domain import new_subscription_id
from reservations.webhooks.subscriptions import subscribe_spec

# The stack's local receiver allowance (http://127.0.0.1:<port>), read at each call.
SUBSCRIBE = subscribe_spec(lambda: settings().webhook_allow_local_receiver)
function = write_function(routes.CREATE_WEBHOOK, SUBSCRIBE, real_ports(new_id=new_subscription_id))
app, lambda_handler = function.app, function.lambda_handler
