"""Lambda entry point for GET /v1/nodes/{nodeId}/workloads."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from reservations.config import cursor_signing_key
from reservations.dal.node_reads import NodeReads
from reservations.http import routes
from reservations.http.functions import api_function
from reservations.http.openapi import query_parameter
from reservations.http.resolver import current_caller
from reservations.logic.read_nodes import (
    WorkloadQuery,
    list_workloads,
)
from reservations.models.api import WorkloadPage

function = api_function()
app, lambda_handler = function.app, function.lambda_handler
reads = NodeReads()


@function.route(routes.LIST_WORKLOADS)
def get_page(
    nodeId: str,
    # Plain strings here: the logic checks them after the key (401 before 400); the
    # document declares what the logic accepts (``http.openapi.QUERY_PARAMETERS``).
    limit: Annotated[str | None, Query(**query_parameter("limit"))] = None,
    cursor: Annotated[str | None, Query(**query_parameter("cursor"))] = None,
    state: Annotated[str | None, Query(**query_parameter("state"))] = None,
) -> WorkloadPage:
    query = WorkloadQuery(limit=limit, cursor=cursor, state=state)
    return list_workloads(current_caller(app), nodeId, query, reads, cursor_signing_key())
