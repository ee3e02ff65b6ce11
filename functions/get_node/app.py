"""Lambda entry point for GET /v1/nodes/{nodeId}."""

from reservations.kernel.http.functions import api_function
from reservations.kernel.http.resolver import current_caller
from reservations.nodes import endpoints
from reservations.nodes.models.views import NodeView
from reservations.nodes.read import get_node
from reservations.nodes.table.reads import NodeReads
from reservations.nodes.wiring import node_ports

function = api_function(node_ports())
app, lambda_handler = function.app, function.lambda_handler
reads = NodeReads()


@function.route(endpoints.GET_NODE)
def get_one(nodeId: str) -> NodeView:
    return get_node(current_caller(app), nodeId, reads, function.ports.clock())
