"""The capacity slice's endpoints, each declared once: lend a reservation's units to the spot
market (release) and take them back, terminating the spot work on them (reclaim), and the
policy that lends them by itself (its lending policy, set or removed). Their refusals and
their key are their use cases'."""

from __future__ import annotations

from reservations.capacity.models import (
    CapacityRequest,
    LendingPolicyRequest,
    ReclaimRequest,
    ReclaimResponse,
)
from reservations.capacity.policy import CLEAR_POLICY, SET_POLICY
from reservations.capacity.reclaim import RECLAIM as RECLAIM_SPEC
from reservations.capacity.release import RELEASE as RELEASE_SPEC
from reservations.capacity.wiring import capacity_ports
from reservations.kernel.grants import Grant
from reservations.kernel.http.routes import ApiRoute
from reservations.lifecycle import ReservationView
from reservations.nodes import node_grants

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

_POLICY_WRITE = Grant(
    sid="PolicyTransactionOnTheReservation",
    actions=("dynamodb:ConditionCheckItem", "dynamodb:UpdateItem"),
    keys=(node_grants.NODES,),
    why="The reservation's policy and version (Update), the node's topology (ConditionCheck).",
)
SET_LENDING = ApiRoute(
    function="set_lending",
    method="PUT",
    path=RESERVATION + "/lending",
    summary="Set a reservation's lending policy: idle units lent by themselves, and the "
    "promises made to the spot workloads placed on them",
    operation_id="setLendingPolicy",
    success="the reservation carrying the policy (as it is, when it carried it already)",
    response=ReservationView,
    use=SET_POLICY,
    ports=capacity_ports,
    grants=(
        node_grants.READ_PARTITIONS,
        node_grants.READ_ENDED,
        _POLICY_WRITE,
        node_grants.WRITE_EVENTS,
    ),
    body=LendingPolicyRequest,
    description="The whole policy: an omitted field takes its default. Idempotent by "
    "nature (no Idempotency-Key); a policy equal to the stored one writes nothing and emits "
    "nothing. A change is a reservation.updated with data.changes.lending.",
    tag=TAG,
)
CLEAR_LENDING = ApiRoute(
    function="clear_lending",
    method="DELETE",
    path=RESERVATION + "/lending",
    summary="Remove a reservation's lending policy: nothing is lent by itself any more",
    operation_id="clearLendingPolicy",
    success="removed, or there was none (no body)",
    status=204,
    use=CLEAR_POLICY,
    ports=capacity_ports,
    grants=(
        node_grants.READ_PARTITIONS,
        node_grants.READ_ENDED,
        _POLICY_WRITE,
        node_grants.WRITE_EVENTS,
    ),
    description="Promises already made to spot workloads stay theirs.",
    tag=TAG,
)

ENDPOINTS = (RECLAIM, RELEASE, SET_LENDING, CLEAR_LENDING)
