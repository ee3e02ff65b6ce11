"""The workloads slice's endpoints, each declared once: the platform scheduler places a
workload and ends one that stopped on its own (a node's workloads are read and listed with
the node's reads: ``nodes.endpoints``)."""

from __future__ import annotations

from reservations.kernel.grants import Grant
from reservations.kernel.http.routes import ApiRoute, Link
from reservations.nodes import WorkloadView, node_grants
from reservations.workloads.models import PlaceWorkloadRequest
from reservations.workloads.scheduler import END, PLACE
from reservations.workloads.wiring import workload_ports

WORKLOADS = "/v1/nodes/{nodeId}/workloads"
WORKLOAD = WORKLOADS + "/{workloadId}"
TAG = "workloads"

PLACE_WORKLOAD = ApiRoute(
    function="place_workload",
    method="POST",
    path=WORKLOADS,
    summary="Place a workload on units of a node (operator keys with workload.place)",
    operation_id="placeWorkload",
    success="the workload, running",
    accepted="with reservationId, when a unit it gets still runs a spot workload: the "
    "workload, waiting (waitingFor: the spot workloads it waits on, each with its "
    "terminationId and terminateAt); it becomes running with workload.started",
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
            "units and every reservation it read; with reservationId it holds units, takes "
            "them back from the reservation and terminates the spot workloads on them.",
        ),
        node_grants.WRITE_EVENTS,
        # A take-back's terminations, sent as a reclaim sends them.
        Grant(sid="SendToThisStacksNodeQueuesOnly", actions=("sqs:SendMessage",), on="node-queues"),
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
            why="An end deletes the workload (closing an open termination) and frees its units, "
            "or hands them over to a waiting workload.",
        ),
        node_grants.WRITE_EVENTS,
        Grant(sid="WriteWorkloadHistory", actions=("dynamodb:PutItem",), keys=("WLHIST#*",)),
    ),
    tag=TAG,
)

ENDPOINTS = (PLACE_WORKLOAD, END_WORKLOAD)
