"""The capacity slice's refusals: a reclaim's plan and count.

Each class is one row of the contract's error table (``kernel.errors``), registered at
its row when it is defined."""

from __future__ import annotations

from reservations.kernel.errors import ApiError


class PlanStale(ApiError, row=110, status=409, code="plan_stale", kept=True):
    """reclaim with a planId: something the plan was bound to changed (a placement, a
    release, another reclaim, an end, the plan's own apply), or the plan expired; nothing
    was done; the message (and details, when it can) name what changed"""


class NotEnoughReleased(ApiError, row=120, status=409, code="not_enough_released", kept=True):
    """reclaim by count: fewer released units than asked; the message says how many there
    are"""
