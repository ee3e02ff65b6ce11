"""The node slice's endpoints, each declared once: register or update a node (its use case
says what it refuses and that it keeps no Idempotency-Key), read it, list its units."""

from __future__ import annotations

from reservations.kernel.http.routes import ApiRoute, read_route
from reservations.nodes.models.requests import NodeRequest
from reservations.nodes.models.views import NodeView, UnitView
from reservations.nodes.register import PUT_NODE as REGISTER

NODE = "/v1/nodes/{nodeId}"
TAG = "nodes"

PUT_NODE = ApiRoute(
    "put_node",
    "PUT",
    NODE,
    "Register a node or update its topology (operator only)",
    "putNode",
    "the node, updated",
    NodeView,
    spec=REGISTER,
    body=NodeRequest,
    description=(
        "PUT is idempotent by itself and takes no Idempotency-Key: a request carrying the "
        "header is answered exactly as one without it (the header is neither checked nor "
        "stored). A repeat of the stored node changes nothing and answers 200; a retry "
        "after a lost 201 answers 200."
    ),
    created="the node, registered",
    tag=TAG,
)
GET_NODE = read_route(
    "get_node",
    NODE,
    "Get a node as PUT answers it (operator and the node's owner)",
    "getNode",
    "the node",
    NodeView,
    TAG,
)
LIST_UNITS = read_route(
    "list_units",
    NODE + "/reservations/units",
    "List a node's allocatable GPU units",
    "listUnits",
    "the node's units, sorted by id",
    list[UnitView],
    "reservations",
)

ENDPOINTS = (LIST_UNITS, PUT_NODE, GET_NODE)
