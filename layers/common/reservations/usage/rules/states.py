"""The eight states a unit of a node is in at every instant, and the contract's rule: the
first that applies (pure). What decides it is the unit's situation at that instant: the
effective status of the reservation governing it (the placement table's rule:
:func:`governs`), whether that reservation has released it, and what claims it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from reservations.nodes import ReservationStatus
from reservations.usage.models import (
    GOVERNED_STATES,
    OPEN_STATES,
    STATES,
    UsageState,
)

# The states are usage's models; the rules here decide which one a unit is in.
__all__ = [
    "GOVERNED_STATES",
    "OPEN_STATES",
    "STATES",
    "Claim",
    "Situation",
    "UsageState",
    "governs",
    "state_of",
    "strongest",
]


class Claim(StrEnum):
    """What holds a unit at an instant, the strongest first when several do (which the
    service never lets happen; a fold of odd facts may)."""

    RECLAIMING = "reclaiming"  # claimed by a spot workload that is terminating
    OTHER = "other"  # claimed by a workload of another tier, or held for a waiting one
    SPOT = "spot"  # claimed by a running spot workload
    FREE = "free"


_STRENGTH = {claim: rank for rank, claim in enumerate(Claim)}


def strongest(claims: Iterable[Claim]) -> Claim:
    """The claim that decides: ``reclaiming`` over any other, ``free`` when none."""
    return min(claims, key=_STRENGTH.__getitem__, default=Claim.FREE)


@dataclass(frozen=True, slots=True)
class Situation:
    """A unit at an instant. ``governor``: the effective status of the reservation that
    governs it (``active`` or ``needs-review``; None: none governs it). ``released``: that
    reservation has it in its ``releasedUnitIds``."""

    governor: ReservationStatus | None
    released: bool
    claim: Claim


def governs(effective: ReservationStatus, in_term: bool) -> bool:
    """The placement table's rule (``workloads/rules/placement.py``): a reservation governs
    its units while it is ``needs-review`` (withheld from everybody until its end), or
    ``active`` inside its term. A pending one that only holds them later governs nothing."""
    if effective is ReservationStatus.NEEDS_REVIEW:
        return True
    return effective is ReservationStatus.ACTIVE and in_term


def state_of(situation: Situation) -> UsageState:
    """The first state that applies (the contract's table, top to bottom)."""
    governor, claim = situation.governor, situation.claim
    if governor is ReservationStatus.NEEDS_REVIEW:
        return UsageState.REVIEW
    if claim is Claim.RECLAIMING:
        return UsageState.RECLAIMING
    if governor is ReservationStatus.ACTIVE:
        if situation.released and claim is Claim.SPOT:
            return UsageState.LENT_USED
        if situation.released and claim is Claim.FREE:
            return UsageState.LENT_IDLE
        return UsageState.RESERVED_IDLE if claim is Claim.FREE else UsageState.RESERVED_USED
    return UsageState.OPEN_IDLE if claim is Claim.FREE else UsageState.OPEN_USED
