"""The workloads slice's endpoints, each declared once: the platform scheduler places a
workload and ends one that stopped on its own; a node's workloads are read and listed."""

from __future__ import annotations

from reservations.kernel.http.openapi import PAGE_QUERY, listed
from reservations.kernel.http.routes import ApiRoute, Link, page_route, read_route
from reservations.nodes import STATES, WorkloadPage, WorkloadView
from reservations.workloads.models import PlaceWorkloadRequest
from reservations.workloads.scheduler import END, PLACE

WORKLOADS = "/v1/nodes/{nodeId}/workloads"
WORKLOAD = WORKLOADS + "/{workloadId}"
TAG = "workloads"

PLACE_WORKLOAD = ApiRoute(
    "place_workload",
    "POST",
    WORKLOADS,
    "Place a workload on units of a node (operator keys with workload.place)",
    "placeWorkload",
    "the workload, running",
    WorkloadView,
    status=201,
    spec=PLACE,
    body=PlaceWorkloadRequest,
    links=(Link("getWorkload", WORKLOAD), Link("endWorkload", WORKLOAD)),
    tag=TAG,
)
END_WORKLOAD = ApiRoute(
    "end_workload",
    "DELETE",
    WORKLOAD,
    "End a workload that stopped on its own: it leaves the node, its units are free",
    "endWorkload",
    "ended (no body)",
    status=204,
    spec=END,
    tag=TAG,
)
LIST_WORKLOADS = page_route(
    "list_workloads",
    WORKLOADS,
    "List the workloads of a node the caller may see",
    "listWorkloads",
    "a page of workloads, sorted by id",
    WorkloadPage,
    TAG,
    {**PAGE_QUERY, "state": listed(STATES, "workload states")},
)
GET_WORKLOAD = read_route(
    "get_workload",
    WORKLOAD,
    "Get one workload of a node",
    "getWorkload",
    "the workload, running or terminating",
    WorkloadView,
    TAG,
)

ENDPOINTS = (PLACE_WORKLOAD, END_WORKLOAD, LIST_WORKLOADS, GET_WORKLOAD)
