"""Lambda entry point for PUT /v1/nodes/{nodeId}."""

from reservations.kernel.http import routes
from reservations.kernel.http.functions import write_function
from reservations.nodes.register import PUT_NODE

function = write_function(routes.PUT_NODE, PUT_NODE)
app, lambda_handler = function.app, function.lambda_handler
