"""The clock's moments of a reservation (pure): what it is armed for, when, in which order;
re-armed by a moved term, disarmed by a cancel, a warning already passed taken at the
arming commit, and none with a warning of 0."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from reservations.lifecycle.rules.clock import (
    ACTIVATION_PASSED,
    CLOCK_SHARDS,
    ClockKind,
    armed_moments,
    clock_shard,
    due_by,
    due_moments,
    next_moment,
    with_fired,
)
from reservations.nodes import ReservationStatus
from tests.support.use_cases import NOW, reservation

pytestmark = pytest.mark.disable_socket

H = timedelta(hours=1)


def _pending(**overrides: object):  # type: ignore[no-untyped-def]
    fields: dict[str, object] = {
        "status": ReservationStatus.PENDING,
        "starts_at": NOW + H,
        "ends_at": NOW + 10 * H,
        "armed_at": NOW,
        "warning_minutes": 60,
        **overrides,
    }
    return reservation(**fields)


def _kinds(moments):  # type: ignore[no-untyped-def]
    return [(m.kind, m.at) for m in moments]


def test_a_pending_reservation_is_armed_for_its_start_its_warning_and_its_end():
    assert _kinds(armed_moments(_pending(), 999)) == [
        (ClockKind.ACTIVATED, NOW + H),
        (ClockKind.EXPIRING, NOW + 9 * H),
        (ClockKind.EXPIRED, NOW + 10 * H),
    ]


def test_one_created_active_gets_no_activation():
    active = _pending(status=ReservationStatus.ACTIVE)
    assert ClockKind.ACTIVATED not in [m.kind for m in armed_moments(active, 60)]


def test_the_warning_is_never_before_the_start():
    short = _pending(ends_at=NOW + H + timedelta(minutes=20))
    assert next_moment(with_fired(short, "activated", NOW + H), 60).at == NOW + H  # type: ignore[union-attr]


def test_a_warning_already_passed_when_armed_is_the_arming_commits_time():
    late = _pending(
        status=ReservationStatus.ACTIVE,
        starts_at=NOW - timedelta(minutes=4),
        ends_at=NOW + timedelta(minutes=30),
    )
    assert _kinds(due_moments(late, 60, NOW)) == [(ClockKind.EXPIRING, NOW)]


def test_a_warning_of_zero_arms_none_and_the_reservation_keeps_the_warning_it_was_armed_with():
    none = _pending(warning_minutes=0)
    assert [m.kind for m in armed_moments(none, 60)] == [ClockKind.ACTIVATED, ClockKind.EXPIRED]
    kept = _pending(warning_minutes=120)
    assert armed_moments(kept, 0)[1].at == NOW + 8 * H
    legacy = _pending(warning_minutes=None)
    assert armed_moments(legacy, 30)[1].at == NOW + 10 * H - timedelta(minutes=30)


def test_each_moment_fires_once_then_the_next_is_armed():
    r = _pending()
    r = with_fired(r, ClockKind.ACTIVATED, NOW + H)
    assert next_moment(r, 60).kind is ClockKind.EXPIRING  # type: ignore[union-attr]
    r = with_fired(r, ClockKind.EXPIRING, NOW + 9 * H)
    assert next_moment(r, 60).kind is ClockKind.EXPIRED  # type: ignore[union-attr]


def test_a_moved_term_rearms_what_it_moved():
    fired = with_fired(with_fired(_pending(), "activated", NOW + H), "expiring", NOW + 9 * H)
    later_end = replace(fired, ends_at=NOW + 20 * H)
    assert _kinds(armed_moments(later_end, 60)) == [
        (ClockKind.EXPIRING, NOW + 19 * H),
        (ClockKind.EXPIRED, NOW + 20 * H),
    ]
    later_start = replace(_pending(), starts_at=NOW + 2 * H)
    moved = replace(with_fired(_pending(), "activated", NOW + H), starts_at=NOW + 2 * H)
    assert armed_moments(moved, 60)[0].kind is ClockKind.ACTIVATED
    assert armed_moments(moved, 60) == armed_moments(later_start, 60)


def test_a_cancel_and_the_history_disarm_everything():
    assert armed_moments(_pending(status=ReservationStatus.CANCELLED), 60) == []
    assert armed_moments(_pending(retained_until=NOW + 400 * 24 * H), 60) == []
    assert next_moment(_pending(ends_at=None, status=ReservationStatus.ACTIVE), 60) is None


def test_an_activation_a_review_passed_is_not_armed_again_and_the_end_fires_in_review_too():
    passed = with_fired(_pending(), ACTIVATION_PASSED, NOW + H)
    assert next_moment(passed, 60).kind is ClockKind.EXPIRING  # type: ignore[union-attr]
    review = _pending(status=ReservationStatus.NEEDS_REVIEW)
    assert [m.kind for m in armed_moments(review, 60)] == [
        ClockKind.EXPIRING,
        ClockKind.EXPIRED,
    ]


def test_index_keys_sort_by_moment_then_kind_and_due_by_covers_the_instant():
    r = _pending(starts_at=NOW, ends_at=NOW + timedelta(minutes=30))  # warning = start
    keys = [m.key for m in armed_moments(r, 60)]
    assert keys == sorted(keys)
    assert len(set(keys)) == 3
    assert keys[0] <= due_by(NOW) < armed_moments(r, 60)[2].key


def test_shards_spread_reservations_and_stay_fixed():
    shards = {clock_shard(f"res-{n:020d}") for n in range(2000)}
    assert len(shards) == CLOCK_SHARDS
    assert clock_shard("res-1") == clock_shard("res-1")
