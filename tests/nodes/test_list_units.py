"""List units over the fakes: who sees a node, and each unit as the contract shows it."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from reservations.kernel.errors import NotFound
from reservations.nodes.list_units import list_units
from reservations.nodes.models.partition import ReservationStatus, Unit
from tests.support.use_cases import AUDIENCE, BROKER, NOW, OPERATOR, OWNER, STRANGER, UNITS

pytestmark = pytest.mark.disable_socket


def _reservation_status(store, status, **changes):
    partition = store.nodes["node-a"]
    partition.reservations["res-1"] = replace(
        partition.reservations["res-1"], status=status, **changes
    )


@pytest.mark.parametrize("caller", [OWNER, OPERATOR, BROKER])
def test_owner_operator_and_a_live_reservations_manager_see_the_units(store, caller):
    assert [u.id for u in list_units(caller, "node-a", store, NOW)] == UNITS


@pytest.mark.parametrize(
    ("status", "changes"),
    [
        (ReservationStatus.PENDING, {"starts_at": NOW + timedelta(days=1)}),
        (ReservationStatus.NEEDS_REVIEW, {}),
    ],
)
def test_a_manager_of_a_pending_or_needs_review_reservation_sees_them(store, status, changes):
    _reservation_status(store, status, **changes)
    assert len(list_units(BROKER, "node-a", store, NOW)) == len(UNITS)


@pytest.mark.parametrize(
    ("status", "changes"),
    [
        (ReservationStatus.CANCELLED, {}),
        (ReservationStatus.EXPIRED, {}),
        (ReservationStatus.ACTIVE, {"ends_at": NOW}),  # expired by the clock
    ],
)
def test_a_manager_of_an_ended_reservation_does_not(store, status, changes):
    _reservation_status(store, status, **changes)
    with pytest.raises(NotFound):
        list_units(BROKER, "node-a", store, NOW)


@pytest.mark.parametrize("caller", [STRANGER, AUDIENCE])
def test_strangers_and_the_reservations_audience_get_the_404_of_an_unknown_node(store, caller):
    with pytest.raises(NotFound):
        list_units(caller, "node-a", store, NOW)
    with pytest.raises(NotFound):
        list_units(OWNER, "node-x", store, NOW)


def test_a_malformed_node_id_or_a_key_without_read_is_404_without_a_read(store):
    for caller, node in ((OWNER, "node a"), (replace(OWNER, permissions=frozenset()), "node-a")):
        with pytest.raises(NotFound):
            list_units(caller, node, store, NOW)
    assert store.reads == 0


def test_each_unit_shows_its_claim_reservability_and_release(store):
    partition = store.nodes["node-a"]
    partition.units["0000:09:00.0"] = Unit(
        "0000:09:00.0", "host", "h100", 1, False, not_sellable_reason="burn-in"
    )
    views = {v.id: v for v in list_units(OWNER, "node-a", store, NOW)}
    first = views[UNITS[0]]
    assert (first.state, first.claimed_by, first.reservable) == ("claimed", "vm:vm-spot", True)
    assert (first.reservation_id, first.released) == ("res-1", True)
    assert (views[UNITS[3]].reservation_id, views[UNITS[3]].released) == ("res-1", False)
    host = views["0000:09:00.0"]
    assert (host.state, host.reservable, host.reservation_id, host.released) == (
        "free",
        False,
        None,
        None,
    )
    assert host.not_reservable_reason == (
        "unit is not sellable: burn-in; allocation class host is not reservable"
    )
    assert list(views) == sorted(views)


def test_a_needs_review_reservation_withholds_its_released_units(store):
    _reservation_status(store, ReservationStatus.NEEDS_REVIEW)
    views = list_units(OWNER, "node-a", store, NOW)
    assert {v.released for v in views} == {False}
    assert {v.reservation_id for v in views} == {"res-1"}
