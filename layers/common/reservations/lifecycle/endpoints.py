"""The lifecycle slice's endpoints, each declared once: create, read and list a node's
reservations, change one (PATCH), cancel one, re-affirm one under review. A write's refusals
and its key are its use case's."""

from __future__ import annotations

from functools import partial

from reservations.kernel.grants import Grant
from reservations.kernel.http.openapi import PAGE_QUERY, listed
from reservations.kernel.http.routes import ApiRoute, Call, Link, page_route, read_route
from reservations.kernel.ids import RESOURCE_ID
from reservations.kernel.times import RFC3339
from reservations.lifecycle.cancel import CANCEL as CANCEL_SPEC
from reservations.lifecycle.create import CREATE, new_reservation_id
from reservations.lifecycle.fleet import FleetQuery, list_fleet_reservations
from reservations.lifecycle.models import (
    CancelRequest,
    CreateReservationRequest,
    FleetReservationPage,
    ReaffirmRequest,
    ReservationPage,
    ReservationView,
    UpdateReservationRequest,
)
from reservations.lifecycle.read import ListQuery, get_reservation, list_reservations
from reservations.lifecycle.reaffirm import REAFFIRM as REAFFIRM_SPEC
from reservations.lifecycle.rules.fleet import MAX_NODE_IDS, ROLES
from reservations.lifecycle.table.fleet import FleetIndexTable
from reservations.lifecycle.update import UPDATE
from reservations.lifecycle.wiring import reservation_ports
from reservations.nodes import NodePorts, ReservationStatus, node_grants

RESERVATIONS = "/v1/nodes/{nodeId}/reservations"
RESERVATION = RESERVATIONS + "/{reservationId}"
TAG = "reservations"
INDEX = FleetIndexTable()  # its client is made on first use, never at import


def _reservation(call: Call[NodePorts]) -> ReservationView:
    ids, ports = call.ids, call.ports
    return get_reservation(
        call.caller, ids["nodeId"], ids["reservationId"], ports.store, ports.clock()
    )


def _page(call: Call[NodePorts]) -> ReservationPage:
    query, ports = ListQuery(**call.query), call.ports
    return list_reservations(call.caller, call.ids["nodeId"], query, ports.store,
                             ports.signing_key(), ports.clock())  # fmt: skip


def _fleet_page(call: Call[NodePorts]) -> FleetReservationPage:
    given = call.query
    query = FleetQuery(
        role=given["role"],
        status=given["status"],
        node_id=given["nodeId"],
        gpu_model_id=given["gpuModelId"],
        ends_before=given["endsBefore"],
        ends_after=given["endsAfter"],
        limit=given["limit"],
        cursor=given["cursor"],
    )
    ports = call.ports
    return list_fleet_reservations(call.caller, query, INDEX, ports.signing_key(), ports.clock())


CREATE_RESERVATION = ApiRoute(
    function="create_reservation",
    method="POST",
    path=RESERVATIONS,
    summary="Reserve units of a node for an audience of orgs",
    operation_id="createReservation",
    success="the new reservation; Location names it",
    response=ReservationView,
    status=201,
    use=CREATE,
    ports=partial(reservation_ports, new_id=new_reservation_id),
    grants=(
        node_grants.READ_PARTITIONS,
        Grant(
            sid="CreateTransactionOnNodeItems",
            actions=("dynamodb:ConditionCheckItem", "dynamodb:UpdateItem", "dynamodb:PutItem"),
            keys=(node_grants.NODES,),
            why="The reservation (Put), the node's version (Update), the units' (ConditionCheck).",
        ),
        node_grants.WRITE_EVENTS,
    ),
    body=CreateReservationRequest,
    located=True,
    links=(
        Link("getReservation", RESERVATION),
        Link("releaseUnits", RESERVATION + "/release"),
        Link("reclaimUnits", RESERVATION + "/reclaim"),
        Link("cancelReservation", RESERVATION + "/cancel"),
        Link("updateReservation", RESERVATION),
    ),
    tag=TAG,
)
GET_RESERVATION = read_route(
    function="get_reservation",
    path=RESERVATION,
    summary="Get one reservation of a node",
    operation_id="getReservation",
    success="the reservation, with its effective status; 304 when If-None-Match names its ETag",
    response=ReservationView,
    use=_reservation,
    ports=reservation_ports,
    grants=(
        Grant(
            sid="ReadNodeAndReservation",
            actions=("dynamodb:BatchGetItem",),
            keys=(node_grants.NODES, node_grants.HISTORY),
            why="The node item and the reservation (live, or in the node's history) in one "
            "BatchGetItem.",
        ),
    ),
    tag=TAG,
    if_none_match=True,
)
LIST_RESERVATIONS = page_route(
    function="list_reservations",
    path=RESERVATIONS,
    summary="List the reservations of a node the caller may see",
    operation_id="listReservations",
    success="a page of reservations, sorted by id",
    response=ReservationPage,
    use=_page,
    ports=reservation_ports,
    grants=(
        Grant(
            sid="ReadNodePartitions",
            actions=("dynamodb:Query", "dynamodb:GetItem"),
            keys=(node_grants.NODES,),
            why="A page is a Query; the node's list access item is read on its own (GetItem) "
            "only when that Query stops at 1 MB before it.",
        ),
        Grant(
            sid="ReadNodeReservationsIndex",
            actions=("dynamodb:Query",),
            keys=(node_grants.NODES,),
            on="index/NodeReservations",
            why="A page with ended statuses (or none named) is a Query of the index holding "
            "the node's reservations and its history, keyed by the node's partition key.",
        ),
    ),
    tag=TAG,
    query={
        **PAGE_QUERY,
        "status": listed((s.value for s in ReservationStatus), "effective statuses"),
    },
)
CANCEL = ApiRoute(
    function="cancel",
    method="POST",
    path=RESERVATION + "/cancel",
    summary="Cancel a reservation: its units stop being governed; workloads keep running",
    operation_id="cancelReservation",
    success="the cancelled reservation",
    response=ReservationView,
    use=CANCEL_SPEC,
    ports=reservation_ports,
    grants=(
        node_grants.READ_PARTITIONS,
        node_grants.READ_ENDED,
        Grant(
            sid="CancelTransactionOnTheReservation",
            actions=("dynamodb:ConditionCheckItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"),
            keys=(node_grants.NODES,),
            why="The reservation leaves the node's partition for the node's history.",
        ),
        node_grants.WRITE_EVENTS,
        Grant(
            sid="WriteHistoryRecords", actions=("dynamodb:PutItem",), keys=(node_grants.HISTORY,)
        ),
    ),
    body=CancelRequest,
    body_required=False,
    tag=TAG,
)
UPDATE_RESERVATION = ApiRoute(
    function="update_reservation",
    method="PATCH",
    path=RESERVATION,
    summary="Change a pending or active reservation's term, audience, managers, units or notes",
    operation_id="updateReservation",
    success="the reservation as changed (as it is, when the body changes nothing)",
    response=ReservationView,
    use=UPDATE,
    ports=reservation_ports,
    grants=(
        node_grants.READ_PARTITIONS,
        node_grants.READ_ENDED,
        Grant(
            sid="UpdateTransactionOnNodeItems",
            actions=("dynamodb:ConditionCheckItem", "dynamodb:UpdateItem", "dynamodb:PutItem"),
            keys=(node_grants.NODES,),
            why="The reservation written whole (Put), the node's version and its list access "
            "(Update), the added units' versions (ConditionCheck).",
        ),
        node_grants.WRITE_EVENTS,
    ),
    body=UpdateReservationRequest,
    description="A JSON object of changes, each field optional, at least one. An absent "
    "field changes nothing; null removes endsAt (open-ended), contractRef or reason. A "
    "change never terminates anything: workloads placed under the old terms keep running. "
    "A body that changes nothing writes nothing, emits nothing and answers 200.",
    tag=TAG,
)
REAFFIRM = ApiRoute(
    function="reaffirm",
    method="POST",
    path=RESERVATION + "/reaffirm",
    summary="Confirm a needs-review reservation on the node's current topology (operator only)",
    operation_id="reaffirmReservation",
    success="the reservation, out of review",
    response=ReservationView,
    use=REAFFIRM_SPEC,
    ports=reservation_ports,
    grants=(
        node_grants.READ_PARTITIONS,
        node_grants.READ_ENDED,
        Grant(
            sid="ReaffirmTransactionOnNodeItems",
            actions=("dynamodb:ConditionCheckItem", "dynamodb:UpdateItem"),
            keys=(node_grants.NODES,),
        ),
        node_grants.WRITE_EVENTS,
    ),
    body=ReaffirmRequest,
    body_required=False,
    tag=TAG,
)

_TIME = {"type": "string", "format": "date-time", "pattern": RFC3339}
LIST_FLEET_RESERVATIONS = page_route(
    function="list_fleet_reservations",
    path="/v1/reservations",
    summary="List the reservations the caller's org may see on any node, soonest end first",
    operation_id="listFleetReservations",
    success="a page of reservations, by endsAt (open-ended last), node id, id",
    response=FleetReservationPage,
    use=_fleet_page,
    ports=reservation_ports,
    grants=(
        Grant(
            sid="QueryFleetIndex",
            actions=("dynamodb:Query",),
            keys=("FLEET#*",),
            why="One Query of the caller's org's fleet index (FLEET#<org>#live or #ended; the "
            "operator's FLEET#/platform#...) a page, ...",
        ),
        Grant(
            sid="ReadListedReservationsAndNodes",
            actions=("dynamodb:BatchGetItem",),
            keys=(node_grants.NODES, node_grants.HISTORY),
            why="... then the reservations it names (in node partitions or their history) and "
            "their nodes, read again.",
        ),
    ),
    tag=TAG,
    query={
        "role": listed(sorted(ROLES), "roles of the caller's org (default: all three)"),
        "status": listed(
            (s.value for s in ReservationStatus),
            "effective statuses (default: pending, active, needs-review)",
        ),
        "nodeId": {
            "description": f"comma-separated node ids, at most {MAX_NODE_IDS}",
            "schema": {
                "type": "array",
                "items": {"type": "string", "pattern": RESOURCE_ID},
                "maxItems": MAX_NODE_IDS,
            },
            "style": "form",
            "explode": False,
        },
        "gpuModelId": {
            "description": "reservations holding a unit of this GPU model (node's topology now)",
            "schema": {"type": "string", "pattern": RESOURCE_ID},
        },
        "endsBefore": {"description": "RFC 3339: endsAt before this time", "schema": _TIME},
        "endsAfter": {
            "description": "RFC 3339: endsAt at or after this time (or open-ended)",
            "schema": _TIME,
        },
        **PAGE_QUERY,
    },
)

ENDPOINTS = (
    CREATE_RESERVATION,
    GET_RESERVATION,
    LIST_RESERVATIONS,
    UPDATE_RESERVATION,
    CANCEL,
    REAFFIRM,
    LIST_FLEET_RESERVATIONS,
)
