"""The nodes slice's refusals: what the units of a node and its topology allow.

Each class is one row of the contract's error table (``kernel.errors``), registered at
its row when it is defined."""

from __future__ import annotations

from reservations.kernel.errors import ApiError


class UnitsUnavailable(ApiError, row=50, status=409, code="units_unavailable", kept=True):
    """create, PATCH, place, node update: a unit is held by another live reservation,
    claimed, or withheld; details name each unit and why"""


class StaleTopology(ApiError, row=70, status=409, code="stale_topology", kept=True):
    """node update: topologyGen is lower than the stored one, or equal with other units"""
