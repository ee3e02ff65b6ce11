"""The workloads slice's endpoints, each declared once: the platform scheduler places a
workload and ends one that stopped on its own; a node's workloads are read and listed."""

from __future__ import annotations

from reservations.kernel.grants import Grant
from reservations.kernel.http.openapi import PAGE_QUERY, listed
from reservations.kernel.http.routes import ApiRoute, Call, Link, page_route, read_route
from reservations.nodes import (
    STATES,
    NodePorts,
    NodeReads,
    WorkloadPage,
    WorkloadQuery,
    WorkloadView,
    get_workload,
    list_workloads,
    node_grants,
)
from reservations.workloads.models import PlaceWorkloadRequest
from reservations.workloads.scheduler import END, PLACE
from reservations.workloads.wiring import workload_ports

WORKLOADS = "/v1/nodes/{nodeId}/workloads"
WORKLOAD = WORKLOADS + "/{workloadId}"
TAG = "workloads"
READS = NodeReads()  # its client is made on first use, never at import


def _workload(call: Call[NodePorts]) -> WorkloadView:
    return get_workload(call.caller, call.ids["nodeId"], call.ids["workloadId"], READS)


def _page(call: Call[NodePorts]) -> WorkloadPage:
    query = WorkloadQuery(**call.query)
    return list_workloads(call.caller, call.ids["nodeId"], query, READS, call.ports.signing_key())


PLACE_WORKLOAD = ApiRoute(
    function="place_workload",
    method="POST",
    path=WORKLOADS,
    summary="Place a workload on units of a node (operator keys with workload.place)",
    operation_id="placeWorkload",
    success="the workload, running",
    response=WorkloadView,
    status=201,
    use=PLACE,
    ports=workload_ports,
    grants=(
        node_grants.READ_PARTITIONS,
        Grant(
            sid="PlacementTransactionOnNodeItems",
            actions=("dynamodb:ConditionCheckItem", "dynamodb:UpdateItem", "dynamodb:PutItem"),
            keys=(node_grants.NODES,),
            why="A placement claims units and puts the workload, conditioned on the node, the "
            "units and every reservation it read.",
        ),
        node_grants.WRITE_EVENTS,
    ),
    body=PlaceWorkloadRequest,
    links=(Link("getWorkload", WORKLOAD), Link("endWorkload", WORKLOAD)),
    tag=TAG,
)
END_WORKLOAD = ApiRoute(
    function="end_workload",
    method="DELETE",
    path=WORKLOAD,
    summary="End a workload that stopped on its own: it leaves the node, its units are free",
    operation_id="endWorkload",
    success="ended (no body)",
    status=204,
    use=END,
    ports=workload_ports,
    grants=(
        node_grants.READ_PARTITIONS,
        Grant(
            sid="EndTransactionOnNodeItems",
            actions=("dynamodb:DeleteItem", "dynamodb:UpdateItem"),
            keys=(node_grants.NODES,),
            why="An end deletes the workload (closing an open termination) and frees its units.",
        ),
        node_grants.WRITE_EVENTS,
        Grant(sid="WriteWorkloadHistory", actions=("dynamodb:PutItem",), keys=("WLHIST#*",)),
    ),
    tag=TAG,
)
LIST_WORKLOADS = page_route(
    function="list_workloads",
    path=WORKLOADS,
    summary="List the workloads of a node the caller may see",
    operation_id="listWorkloads",
    success="a page of workloads, sorted by id",
    response=WorkloadPage,
    use=_page,
    ports=workload_ports,
    grants=(node_grants.READ_PARTITIONS,),
    tag=TAG,
    query={**PAGE_QUERY, "state": listed(STATES, "workload states")},
)
GET_WORKLOAD = read_route(
    function="get_workload",
    path=WORKLOAD,
    summary="Get one workload of a node",
    operation_id="getWorkload",
    success="the workload, running or terminating",
    response=WorkloadView,
    use=_workload,
    ports=workload_ports,
    grants=(
        Grant(
            sid="ReadNodeAndWorkload",
            actions=("dynamodb:BatchGetItem",),
            keys=(node_grants.NODES,),
            why="The node item (for its owner) and the workload, in one BatchGetItem.",
        ),
    ),
    tag=TAG,
)

ENDPOINTS = (PLACE_WORKLOAD, END_WORKLOAD, LIST_WORKLOADS, GET_WORKLOAD)
