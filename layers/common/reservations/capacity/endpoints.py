"""The capacity slice's endpoints, each declared once: lend a reservation's units to the spot
market (release) and take them back, terminating the spot work on them (reclaim). Their
refusals and their key are their use cases' (``spec``)."""

from __future__ import annotations

from reservations.capacity.models import CapacityRequest, ReclaimRequest, ReclaimResponse
from reservations.capacity.reclaim import RECLAIM as RECLAIM_SPEC
from reservations.capacity.release import RELEASE as RELEASE_SPEC
from reservations.kernel.http.routes import ApiRoute
from reservations.nodes import ReservationView

RESERVATION = "/v1/nodes/{nodeId}/reservations/{reservationId}"
TAG = "reservations"

RELEASE = ApiRoute(
    "release",
    "POST",
    RESERVATION + "/release",
    "Lend reserved units to the spot market",
    "releaseUnits",
    "the reservation after the call (dry run: as it would be)",
    ReservationView,
    spec=RELEASE_SPEC,
    body=CapacityRequest,
    tag=TAG,
)
RECLAIM = ApiRoute(
    "reclaim",
    "POST",
    RESERVATION + "/reclaim",
    "Reclaim released units and terminate the spot workloads on them",
    "reclaimUnits",
    "the reservation after the call, and the outcome",
    ReclaimResponse,
    spec=RECLAIM_SPEC,
    body=ReclaimRequest,
    tag=TAG,
)

ENDPOINTS = (RECLAIM, RELEASE)
