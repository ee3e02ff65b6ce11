"""Lambda entry point for GET /v1/nodes/{nodeId}/workloads."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from reservations.config import cursor_signing_key
from reservations.dal.node_reads import NodeReads
from reservations.http import routes
from reservations.http.functions import api_function
from reservations.http.resolver import current_caller
from reservations.logic.read_nodes import (
    LIMIT_PATTERN,
    STATE_PATTERN,
    WorkloadQuery,
    list_workloads,
)
from reservations.models.api import WorkloadPage
from reservations.rules.cursors import MAX_CURSOR

function = api_function()
app, lambda_handler = function.app, function.lambda_handler
reads = NodeReads()


def _text(**rules: object) -> dict[str, object]:
    """A query parameter's schema: a string (never null: an absent one is not sent)."""
    return {"anyOf": [{"type": "string", **rules}]}


@function.route(routes.LIST_WORKLOADS)
def get_page(
    nodeId: str,
    # Plain strings here: the logic checks them after the key (401 before 400). The document
    # shows the patterns the logic accepts; a parameter given empty is absent.
    limit: Annotated[
        str | None,
        Query(description="1-100, default 50", json_schema_extra=_text(pattern=LIMIT_PATTERN)),
    ] = None,
    cursor: Annotated[
        str | None,
        Query(
            description="nextCursor of the previous page, unchanged (any other is a 400)",
            json_schema_extra=_text(maxLength=MAX_CURSOR),
        ),
    ] = None,
    state: Annotated[
        str | None,
        Query(
            description="comma-separated: running, terminating",
            json_schema_extra=_text(pattern=STATE_PATTERN),
        ),
    ] = None,
) -> WorkloadPage:
    query = WorkloadQuery(limit=limit, cursor=cursor, state=state)
    return list_workloads(current_caller(app), nodeId, query, reads, cursor_signing_key())
