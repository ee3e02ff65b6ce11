"""When a reservation moves to the history, until when the orgs it names may list the node
for it, and which other reservations decide that when one ends."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from reservations.kernel.times import LAST_MOMENT
from reservations.lifecycle.rules.history import due_to_move, named_after_end, named_until
from reservations.nodes.models.partition import Reservation, ReservationStatus

pytestmark = pytest.mark.disable_socket

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
DAYS = 30
ENDED = Reservation(
    "res-1",
    "node-a",
    ReservationStatus.ACTIVE,
    starts_at=NOW - timedelta(days=10),
    ends_at=NOW,
    created_at=NOW - timedelta(days=11),
    updated_at=NOW - timedelta(days=11),
    allowed_org_ids=("org-lab",),
    managing_org_ids=(),
    reserved_unit_ids=("0000:04:00.0",),
)


def test_a_reservation_moves_from_the_moment_it_ends():
    assert not due_to_move(ENDED, NOW - timedelta(seconds=1))
    assert due_to_move(ENDED, NOW)
    assert not due_to_move(replace(ENDED, ends_at=None), NOW)


def test_a_live_open_ended_reservation_names_its_orgs_for_ever_a_cancelled_one_for_30_days():
    open_ended = replace(ENDED, ends_at=None)
    assert named_until(open_ended, DAYS) == LAST_MOMENT
    cancelled = replace(open_ended, status=ReservationStatus.CANCELLED, updated_at=NOW)
    assert named_until(cancelled, DAYS) == NOW + timedelta(days=DAYS)
    assert named_until(ENDED, DAYS) == NOW + timedelta(days=DAYS)


def test_the_end_is_decided_by_the_other_reservation_naming_the_org_longest():
    shorter = replace(ENDED, id="res-2", ends_at=NOW + timedelta(days=1))
    longer = replace(ENDED, id="res-3", ends_at=NOW + timedelta(days=2))
    elsewhere = replace(ENDED, id="res-4", ends_at=None, allowed_org_ids=("org-other",))
    before, after, deciding = named_after_end(ENDED, [ENDED, shorter, longer, elsewhere], DAYS)
    kept = NOW + timedelta(days=2 + DAYS)
    assert (before, after, deciding) == ({"org-lab": kept}, {"org-lab": kept}, (longer,))


def test_another_reservation_naming_the_org_no_longer_than_the_end_decides_nothing():
    same = replace(ENDED, id="res-2")
    until = NOW + timedelta(days=DAYS)
    assert named_after_end(ENDED, [ENDED, same], DAYS) == (
        {"org-lab": until},
        {"org-lab": until},
        (),
    )
