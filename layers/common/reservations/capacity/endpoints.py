"""The capacity slice's endpoints, each declared once: lend a reservation's units to the spot
market (release) and take them back, terminating the spot work on them (reclaim). Their
refusals and their key are their use cases'."""

from __future__ import annotations

from reservations.capacity.models import CapacityRequest, ReclaimRequest, ReclaimResponse
from reservations.capacity.reclaim import RECLAIM as RECLAIM_SPEC
from reservations.capacity.release import RELEASE as RELEASE_SPEC
from reservations.capacity.wiring import capacity_ports
from reservations.kernel.grants import Grant
from reservations.kernel.http.routes import ApiRoute
from reservations.nodes import ReservationView, node_grants

RESERVATION = "/v1/nodes/{nodeId}/reservations/{reservationId}"
TAG = "reservations"

RELEASE = ApiRoute(
    function="release",
    method="POST",
    path=RESERVATION + "/release",
    summary="Lend reserved units to the spot market",
    operation_id="releaseUnits",
    success="the reservation after the call (dry run: as it would be)",
    response=ReservationView,
    use=RELEASE_SPEC,
    ports=capacity_ports,
    grants=(
        node_grants.READ_PARTITIONS,
        node_grants.READ_ENDED,
        Grant(
            sid="ReleaseTransactionOnTheReservation",
            actions=("dynamodb:ConditionCheckItem", "dynamodb:UpdateItem"),
            keys=(node_grants.NODES,),
        ),
        node_grants.WRITE_EVENTS,
    ),
    body=CapacityRequest,
    tag=TAG,
)
RECLAIM = ApiRoute(
    function="reclaim",
    method="POST",
    path=RESERVATION + "/reclaim",
    summary="Reclaim released units and terminate the spot workloads on them",
    operation_id="reclaimUnits",
    success="the reservation after the call, and the outcome",
    response=ReclaimResponse,
    use=RECLAIM_SPEC,
    ports=capacity_ports,
    grants=(
        node_grants.READ_PARTITIONS,
        node_grants.READ_ENDED,
        Grant(
            sid="ReclaimTransactionOnNodeItems",
            actions=("dynamodb:ConditionCheckItem", "dynamodb:UpdateItem"),
            keys=(node_grants.NODES,),
        ),
        node_grants.WRITE_EVENTS,
        Grant(sid="SendToThisStacksNodeQueuesOnly", actions=("sqs:SendMessage",), on="node-queues"),
    ),
    variables=("CURSOR_SIGNING_KEY",),  # signs and checks a dry run's plan (planId)
    body=ReclaimRequest,
    tag=TAG,
)

ENDPOINTS = (RECLAIM, RELEASE)
