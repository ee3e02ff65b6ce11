"""The reservations slice's endpoints, each declared once: create, read and list a node's
reservations, change one (PATCH), cancel one, re-affirm one under review. A write's refusals
and its key are its use case's (``spec``)."""

from __future__ import annotations

from dataclasses import replace

from reservations.kernel.http.openapi import PAGE_QUERY, listed
from reservations.kernel.http.routes import ApiRoute, Link, page_route, read_route
from reservations.kernel.ids import RESOURCE_ID
from reservations.kernel.times import RFC3339
from reservations.nodes import ReservationPage, ReservationStatus, ReservationView
from reservations.reservations.cancel import CANCEL as CANCEL_SPEC
from reservations.reservations.create import CREATE
from reservations.reservations.models import (
    CancelRequest,
    CreateReservationRequest,
    FleetReservationPage,
    ReaffirmRequest,
    UpdateReservationRequest,
)
from reservations.reservations.reaffirm import REAFFIRM as REAFFIRM_SPEC
from reservations.reservations.rules.fleet import MAX_NODE_IDS, ROLES
from reservations.reservations.update import UPDATE

RESERVATIONS = "/v1/nodes/{nodeId}/reservations"
RESERVATION = RESERVATIONS + "/{reservationId}"
TAG = "reservations"

CREATE_RESERVATION = ApiRoute(
    "create_reservation",
    "POST",
    RESERVATIONS,
    "Reserve units of a node for an audience of orgs",
    "createReservation",
    "the new reservation; Location names it",
    ReservationView,
    status=201,
    spec=CREATE,
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
GET_RESERVATION = replace(
    read_route(
        "get_reservation",
        RESERVATION,
        "Get one reservation of a node",
        "getReservation",
        "the reservation, with its effective status; 304 when If-None-Match names its ETag",
        ReservationView,
        TAG,
    ),
    if_none_match=True,
)
LIST_RESERVATIONS = page_route(
    "list_reservations",
    RESERVATIONS,
    "List the reservations of a node the caller may see",
    "listReservations",
    "a page of reservations, sorted by id",
    ReservationPage,
    TAG,
    {**PAGE_QUERY, "status": listed((s.value for s in ReservationStatus), "effective statuses")},
)
CANCEL = ApiRoute(
    "cancel",
    "POST",
    RESERVATION + "/cancel",
    "Cancel a reservation: its units stop being governed; workloads keep running",
    "cancelReservation",
    "the cancelled reservation",
    ReservationView,
    spec=CANCEL_SPEC,
    body=CancelRequest,
    body_required=False,
    tag=TAG,
)
UPDATE_RESERVATION = ApiRoute(
    "update_reservation",
    "PATCH",
    RESERVATION,
    "Change a pending or active reservation's term, audience, managers, units or notes",
    "updateReservation",
    "the reservation as changed (as it is, when the body changes nothing)",
    ReservationView,
    spec=UPDATE,
    body=UpdateReservationRequest,
    description="A JSON object of changes, each field optional, at least one. An absent "
    "field changes nothing; null removes endsAt (open-ended), contractRef or reason. A "
    "change never terminates anything: workloads placed under the old terms keep running. "
    "A body that changes nothing writes nothing, emits nothing and answers 200.",
    tag=TAG,
)
REAFFIRM = ApiRoute(
    "reaffirm",
    "POST",
    RESERVATION + "/reaffirm",
    "Confirm a needs-review reservation on the node's current topology (operator only)",
    "reaffirmReservation",
    "the reservation, out of review",
    ReservationView,
    spec=REAFFIRM_SPEC,
    body=ReaffirmRequest,
    body_required=False,
    tag=TAG,
)

_TIME = {"type": "string", "format": "date-time", "pattern": RFC3339}
LIST_FLEET_RESERVATIONS = page_route(
    "list_fleet_reservations",
    "/v1/reservations",
    "List the reservations the caller's org may see on any node, soonest end first",
    "listFleetReservations",
    "a page of reservations, by endsAt (open-ended last), node id, id",
    FleetReservationPage,
    TAG,
    {
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
