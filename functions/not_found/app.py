"""Lambda entry point for the HTTP API's ``$default`` route: every path and method no other
function takes, answered with the contract's 404 instead of API Gateway's own."""

from reservations.kernel.clock import utc_now
from reservations.kernel.http.functions import api_function
from reservations.kernel.ports import Ports

# No routes on purpose: every request reaches the resolver's not-found handler, so the body
# and headers are byte for byte those of every other 404.
function = api_function(Ports(clock=utc_now), default_route=True)
app, lambda_handler = function.app, function.lambda_handler
