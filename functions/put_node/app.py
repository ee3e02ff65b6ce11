"""Lambda entry point for PUT /v1/nodes/{nodeId}."""

from reservations.kernel.http.functions import write_function
from reservations.nodes import endpoints
from reservations.nodes.wiring import register_ports
from reservations.terminations.table.queues import make_node_queue

function = write_function(endpoints.PUT_NODE, register_ports(make_node_queue))
app, lambda_handler = function.app, function.lambda_handler
