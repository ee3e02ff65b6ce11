"""Lambda entry point for GET /v1/nodes/{nodeId}/workloads/{workloadId}."""

from reservations.dal.node_reads import NodeReads
from reservations.http import routes
from reservations.http.functions import api_function
from reservations.http.resolver import current_caller
from reservations.logic.read_nodes import get_workload
from reservations.models.api import WorkloadView

function = api_function()
app, lambda_handler = function.app, function.lambda_handler
reads = NodeReads()


@function.route(routes.GET_WORKLOAD)
def get_one(nodeId: str, workloadId: str) -> WorkloadView:
    return get_workload(current_caller(app), nodeId, workloadId, reads)
