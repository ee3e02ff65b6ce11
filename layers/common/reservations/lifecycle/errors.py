"""The lifecycle slice's refusals: a reservation's state, and the units a create, a
change or a re-affirm names.

Each class is one row of the contract's error table (``kernel.errors``), registered at
its row when it is defined."""

from __future__ import annotations

from reservations.kernel.errors import ApiError


class ReservationNotActive(ApiError, row=40, status=409, code="reservation_not_active", kept=True):
    """release, reclaim, a placement with reservationId: the reservation is not active, or its
    term does not include now"""


class ReservationNotInReview(
    ApiError, row=80, status=409, code="reservation_not_in_review", kept=True
):
    """re-affirm: the reservation is not needs-review"""


class ReservationNotChangeable(
    ApiError, row=90, status=409, code="reservation_not_changeable", kept=True
):
    """PATCH: the reservation is not pending or active, or its stored state does not allow
    the change (startsAt once active, an endsAt not after startsAt, removing every unit,
    adding a unit it holds, more than 32 units after the change); details name the field"""


class UnitsNotInReservation(
    ApiError, row=190, status=422, code="units_not_in_reservation", kept=True
):
    """release, reclaim: some unitIds are not in the reservation's reservedUnitIds; PATCH:
    some removeUnitIds are not"""


class UnitsNotReservable(ApiError, row=200, status=422, code="units_not_reservable", kept=True):
    """create, PATCH addUnitIds, re-affirm: a unit is not on the node or not reservable;
    details say which"""
