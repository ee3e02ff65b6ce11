"""The eight states, the first that applies: one case per row of the contract's table, and
the rows that win over the ones below them."""

from __future__ import annotations

import pytest

from reservations.nodes import ReservationStatus
from reservations.usage.rules.states import (
    GOVERNED_STATES,
    STATES,
    Claim,
    Situation,
    UsageState,
    governs,
    state_of,
    strongest,
)

pytestmark = pytest.mark.disable_socket

ACTIVE, REVIEW = ReservationStatus.ACTIVE, ReservationStatus.NEEDS_REVIEW


@pytest.mark.parametrize(
    ("governor", "released", "claim", "state"),
    [
        # review: governed by a needs-review reservation, whatever else
        (REVIEW, False, Claim.FREE, UsageState.REVIEW),
        (REVIEW, True, Claim.RECLAIMING, UsageState.REVIEW),
        # reclaiming: a terminating spot workload claims it, whatever governs it
        (ACTIVE, False, Claim.RECLAIMING, UsageState.RECLAIMING),
        (None, False, Claim.RECLAIMING, UsageState.RECLAIMING),
        # lent: released, claimed by a spot workload or not claimed
        (ACTIVE, True, Claim.SPOT, UsageState.LENT_USED),
        (ACTIVE, True, Claim.FREE, UsageState.LENT_IDLE),
        # reserved: active, claimed or held by a workload (the audience's on a released
        # unit stays theirs), or not
        (ACTIVE, True, Claim.OTHER, UsageState.RESERVED_USED),
        (ACTIVE, False, Claim.SPOT, UsageState.RESERVED_USED),
        (ACTIVE, False, Claim.OTHER, UsageState.RESERVED_USED),
        (ACTIVE, False, Claim.FREE, UsageState.RESERVED_IDLE),
        # open: governed by nothing now
        (None, False, Claim.SPOT, UsageState.OPEN_USED),
        (None, False, Claim.OTHER, UsageState.OPEN_USED),
        (None, False, Claim.FREE, UsageState.OPEN_IDLE),
    ],
)
def test_the_first_state_that_applies(
    governor: ReservationStatus | None, released: bool, claim: Claim, state: UsageState
) -> None:
    assert state_of(Situation(governor, released, claim)) is state


def test_the_states_are_the_contracts_in_its_order_and_a_governed_unit_is_never_open() -> None:
    assert [s.value for s in STATES] == [
        "review",
        "reclaiming",
        "lent_used",
        "lent_idle",
        "reserved_used",
        "reserved_idle",
        "open_used",
        "open_idle",
    ]
    assert UsageState.OPEN_USED not in GOVERNED_STATES
    assert UsageState.RECLAIMING in GOVERNED_STATES


@pytest.mark.parametrize(
    ("status", "in_term", "governing"),
    [
        (ReservationStatus.ACTIVE, True, True),
        (ReservationStatus.ACTIVE, False, False),  # stored active, its term not begun
        (ReservationStatus.NEEDS_REVIEW, False, True),  # withheld until its end
        (ReservationStatus.PENDING, False, False),  # holds the unit only later
        (ReservationStatus.EXPIRED, False, False),
        (ReservationStatus.CANCELLED, True, False),
    ],
)
def test_which_reservation_governs_is_the_placement_tables_rule(
    status: ReservationStatus, in_term: bool, governing: bool
) -> None:
    assert governs(status, in_term) is governing


def test_the_strongest_claim_decides_and_none_is_free() -> None:
    assert strongest([Claim.SPOT, Claim.RECLAIMING, Claim.OTHER]) is Claim.RECLAIMING
    assert strongest([Claim.SPOT, Claim.OTHER]) is Claim.OTHER
    assert strongest([]) is Claim.FREE
