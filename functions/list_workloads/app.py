"""Lambda entry point for GET /v1/nodes/{nodeId}/workloads."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from reservations.kernel.http.functions import api_function
from reservations.kernel.http.openapi import comma_list, query_parameter
from reservations.kernel.http.resolver import current_caller
from reservations.kernel.settings import cursor_signing_key
from reservations.nodes.models.views import WorkloadPage
from reservations.nodes.read import (
    WorkloadQuery,
    list_workloads,
)
from reservations.nodes.table.reads import NodeReads
from reservations.workloads import endpoints
from reservations.workloads.wiring import workload_ports

function = api_function(workload_ports())
app, lambda_handler = function.app, function.lambda_handler
reads = NodeReads()


@function.route(endpoints.LIST_WORKLOADS)
def get_page(
    nodeId: str,
    # Plain strings here: the logic checks them after the key (401 before 400); the
    # document declares what the logic accepts (``ApiRoute.query``).
    limit: Annotated[
        str | None, Query(**query_parameter(endpoints.LIST_WORKLOADS, "limit"))
    ] = None,
    cursor: Annotated[
        str | None, Query(**query_parameter(endpoints.LIST_WORKLOADS, "cursor"))
    ] = None,
    state: Annotated[
        list[str] | None, Query(**query_parameter(endpoints.LIST_WORKLOADS, "state"))
    ] = None,
) -> WorkloadPage:
    query = WorkloadQuery(limit=limit, cursor=cursor, state=comma_list(state))
    return list_workloads(current_caller(app), nodeId, query, reads, cursor_signing_key())
