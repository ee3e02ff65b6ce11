"""The node slice's endpoints, each declared once: register or update a node (its use case
says what it refuses and that it keeps no Idempotency-Key), read it, list its units, and
read and list its workloads."""

from __future__ import annotations

from functools import partial

from reservations.kernel.grants import Grant
from reservations.kernel.http.openapi import PAGE_QUERY, listed
from reservations.kernel.http.routes import ApiRoute, Call, page_route, read_route
from reservations.nodes.list_units import list_units
from reservations.nodes.models.requests import NodeRequest
from reservations.nodes.models.views import NodeView, UnitView, WorkloadPage, WorkloadView
from reservations.nodes.ports import NodePorts
from reservations.nodes.read import STATES, WorkloadQuery, get_node, get_workload, list_workloads
from reservations.nodes.register import PUT_NODE as REGISTER
from reservations.nodes.table import grants as node_grants
from reservations.nodes.table.queue import make_node_queue
from reservations.nodes.table.reads import NodeReads
from reservations.nodes.wiring import node_ports, register_ports

NODE = "/v1/nodes/{nodeId}"
WORKLOADS = NODE + "/workloads"
WORKLOAD = WORKLOADS + "/{workloadId}"
TAG = "nodes"
READS = NodeReads()  # its client is made on first use, never at import


def _node(call: Call[NodePorts]) -> NodeView:
    return get_node(call.caller, call.ids["nodeId"], READS, call.ports.clock())


def _workload(call: Call[NodePorts]) -> WorkloadView:
    ids = call.ids
    return get_workload(call.caller, ids["nodeId"], ids["workloadId"], READS, call.ports.clock())


def _workloads(call: Call[NodePorts]) -> WorkloadPage:
    query = WorkloadQuery(**call.query)
    return list_workloads(call.caller, call.ids["nodeId"], query, READS, call.ports.signing_key())


def _units(call: Call[NodePorts]) -> list[UnitView]:
    return list_units(call.caller, call.ids["nodeId"], call.ports.store, call.ports.clock())


PUT_NODE = ApiRoute(
    function="put_node",
    method="PUT",
    path=NODE,
    summary="Register a node or update its topology (operator only)",
    operation_id="putNode",
    success="the node, updated",
    response=NodeView,
    use=REGISTER,
    ports=partial(register_ports, make_node_queue),
    grants=(
        node_grants.READ_PARTITIONS,
        Grant(
            sid="NodeTransactionOnNodeItems",
            actions=("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"),
            keys=(node_grants.NODES,),
            why="One transaction writes the node, its units and the reservations put under review.",
        ),
        node_grants.WRITE_EVENTS,
        Grant(
            sid="MakeThisStacksNodeQueuesOnly",
            actions=("sqs:CreateQueue", "sqs:GetQueueAttributes"),
            on="node-queues",
            why="The node's queue is made first (idempotent).",
        ),
    ),
    variables=("NODE_QUEUE_PREFIX", "NODE_DEAD_LETTER_QUEUE_ARN"),
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
    function="get_node",
    path=NODE,
    summary="Get a node as PUT answers it (operator and the node's owner)",
    operation_id="getNode",
    success="the node",
    response=NodeView,
    use=_node,
    ports=node_ports,
    grants=(
        Grant(
            sid="ReadNodeItemAndUnits",
            actions=("dynamodb:GetItem", "dynamodb:Query"),
            keys=(node_grants.NODES,),
            why="The node is one GetItem (a Query of its unit items only for a node item that "
            "does not name them).",
        ),
    ),
    tag=TAG,
)
LIST_UNITS = read_route(
    function="list_units",
    path=NODE + "/reservations/units",
    summary="List a node's allocatable GPU units",
    operation_id="listUnits",
    success="the node's units, sorted by id",
    response=list[UnitView],
    use=_units,
    ports=node_ports,
    grants=(node_grants.READ_PARTITIONS,),
    tag="reservations",
)

LIST_WORKLOADS = page_route(
    function="list_workloads",
    path=WORKLOADS,
    summary="List the workloads of a node the caller may see",
    operation_id="listWorkloads",
    success="a page of workloads, sorted by id",
    response=WorkloadPage,
    use=_workloads,
    ports=node_ports,
    grants=(node_grants.READ_PARTITIONS,),
    tag="workloads",
    query={**PAGE_QUERY, "state": listed(STATES, "workload states")},
)
GET_WORKLOAD = read_route(
    function="get_workload",
    path=WORKLOAD,
    summary="Get one workload of a node",
    operation_id="getWorkload",
    success="the workload: running, terminating or waiting; or ended (its own use), for "
    "HistoryRetentionDays after it left the node",
    response=WorkloadView,
    use=_workload,
    ports=node_ports,
    grants=(
        Grant(
            sid="ReadNodeAndWorkload",
            actions=("dynamodb:BatchGetItem",),
            keys=(node_grants.NODES,),
            why="The node item (for its owner) and the workload, in one BatchGetItem.",
        ),
        Grant(
            sid="ReadWorkloadHistory",
            actions=("dynamodb:Query",),
            keys=(node_grants.WORKLOAD_HISTORY,),
            why="A workload not on the node: its latest life in the node's workload history "
            "(one Query, Limit 1).",
        ),
    ),
    tag="workloads",
)

ENDPOINTS = (LIST_UNITS, PUT_NODE, GET_NODE, LIST_WORKLOADS, GET_WORKLOAD)
