"""Lambda entry point for GET /v1/nodes/{nodeId}."""

from reservations.dal.node_reads import NodeReads
from reservations.http import routes
from reservations.http.functions import api_function
from reservations.http.resolver import current_caller
from reservations.logic.read_nodes import get_node
from reservations.models.api import NodeView

function = api_function()
app, lambda_handler = function.app, function.lambda_handler
reads = NodeReads()


@function.route(routes.GET_NODE)
def get_one(nodeId: str) -> NodeView:
    return get_node(current_caller(app), nodeId, reads, function.ports.clock())
