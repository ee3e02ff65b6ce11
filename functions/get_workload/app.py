"""Lambda entry point for GET /v1/nodes/{nodeId}/workloads/{workloadId}."""

from reservations.kernel.http.functions import api_function
from reservations.kernel.http.resolver import current_caller
from reservations.nodes.models.views import WorkloadView
from reservations.nodes.read import get_workload
from reservations.nodes.table.reads import NodeReads
from reservations.workloads import endpoints
from reservations.workloads.wiring import workload_ports

function = api_function(workload_ports())
app, lambda_handler = function.app, function.lambda_handler
reads = NodeReads()


@function.route(endpoints.GET_WORKLOAD)
def get_one(nodeId: str, workloadId: str) -> WorkloadView:
    return get_workload(current_caller(app), nodeId, workloadId, reads)
