"""Which reservations a node update put under review, judged by the relay from the update's
bounded scope (``nodes.rules.topology.reviewed_units``) against each reservation as it reads it,
whenever that is: as the update itself judged them, for reservations changed since too."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from reservations.nodes.models.partition import Reservation, ReservationStatus, ReviewScope
from reservations.nodes.rules.topology import reviewed_units

pytestmark = pytest.mark.disable_socket

AT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
U4, U5, U6 = "0000:04:00.0", "0000:05:00.0", "0000:06:00.0"
# Generation 3 changed 04 and removed 06; 05 last changed at generation 2.
SCOPE = ReviewScope("wr-1", 3, frozenset({U4, U6}), {U4: 0, U5: 2, U6: 0}, {U4: 3, U5: 2})
LIVE = Reservation(
    "res-1", "node-a", ReservationStatus.PENDING, AT + timedelta(days=1), AT - timedelta(days=1),
    AT - timedelta(days=1), AT + timedelta(days=2), reserved_unit_ids=(U4, U5), topology_gen=2,
)  # fmt: skip
LATER = AT + timedelta(seconds=5)


@pytest.mark.parametrize(
    ("reservation", "units"),
    [
        (LIVE, [U4]),
        (replace(LIVE, reserved_unit_ids=(U6,)), [U6]),  # its unit is gone
        (replace(LIVE, status=ReservationStatus.ACTIVE, starts_at=AT - timedelta(hours=1)), [U4]),
        # Cancelled after the update: it was live at it, and its review stays.
        (replace(LIVE, status=ReservationStatus.CANCELLED, updated_at=LATER), [U4]),
        # Cancelled before it, ended before it, or on units it did not touch: none.
        (replace(LIVE, status=ReservationStatus.CANCELLED), []),
        (replace(LIVE, starts_at=AT - timedelta(days=2), ends_at=AT), []),
        (replace(LIVE, reserved_unit_ids=(U5,)), []),
        # Already under review before it (sold at 1, 05 changed at 2): not this update's.
        (replace(LIVE, topology_gen=1), []),
        (replace(LIVE, status=ReservationStatus.NEEDS_REVIEW), []),
        # Made after it (the node's new generation), or re-affirmed since (the same): none.
        (replace(LIVE, topology_gen=3, updated_at=LATER), []),
    ],
)
def test_a_reservation_is_reviewed_by_the_update_as_the_update_judged_it(reservation, units):
    assert reviewed_units(SCOPE, reservation, AT) == units


def test_a_node_item_that_kept_no_generations_before_reviews_what_it_changed():
    scope = replace(SCOPE, before=None)
    assert reviewed_units(scope, replace(LIVE, topology_gen=None), AT) == [U4]
