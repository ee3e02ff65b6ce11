"""The workloads slice's refusals: a placement, and a placement that takes lent units back.

Each class is one row of the contract's error table (``kernel.errors``), registered at
its row when it is defined."""

from __future__ import annotations

from reservations.kernel.errors import ApiError


class WorkloadExists(ApiError, row=60, status=409, code="workload_exists", kept=True):
    """place: the workload id is already on the node"""


class UnitsNotSellable(ApiError, row=210, status=422, code="units_not_sellable", kept=True):
    """place: a unit is not on the node or not sellable; details say which and why"""


class NotEnoughUnits(ApiError, row=122, status=409, code="not_enough_units", kept=True):
    """place with reservationId and count: the reservation cannot give that many units (its
    own, not claimed or held by its audience's work); the message says how many it can"""


class UnknownReservation(ApiError, row=124, status=422, code="unknown_reservation", kept=True):
    """place with reservationId: no such reservation on the node"""


class OrgNotInAudience(ApiError, row=126, status=422, code="org_not_in_audience", kept=True):
    """place with reservationId: orgId is not in the reservation's audience"""
