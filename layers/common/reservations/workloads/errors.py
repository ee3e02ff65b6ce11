"""The workloads slice's refusals: a placement.

Each class is one row of the contract's error table (``kernel.errors``), registered at
its row when it is defined."""

from __future__ import annotations

from reservations.kernel.errors import ApiError


class WorkloadExists(ApiError, row=60, status=409, code="workload_exists", kept=True):
    """place: the workload id is already on the node"""


class UnitsNotSellable(ApiError, row=210, status=422, code="units_not_sellable", kept=True):
    """place: a unit is not on the node or not sellable; details say which and why"""
