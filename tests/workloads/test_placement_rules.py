"""The placement table, one test per row and per reason: which free unit is open to whom,
at which tier, now; and which units are not sellable at all."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from reservations.nodes.models.partition import (
    Node,
    NodeSnapshot,
    Reservation,
    ReservationStatus,
    Tier,
    Unit,
)
from reservations.workloads.rules.placement import (
    PlacementRefusal,
    not_sellable,
    reservations_read,
    unavailable,
    unit_refusal,
)

pytestmark = pytest.mark.disable_socket

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
U = "0000:04:00.0"
AUDIENCE = "org-lab"
OUTSIDER = "org-spotbuyer"
ALL_TIERS = list(Tier)


def reservation(
    status: ReservationStatus = ReservationStatus.ACTIVE,
    released: tuple[str, ...] = (),
    starts: timedelta = timedelta(days=-1),
    ends: timedelta | None = timedelta(days=30),
    reservation_id: str = "res-1",
) -> Reservation:
    return Reservation(
        id=reservation_id,
        node_id="node-a",
        status=status,
        starts_at=NOW + starts,
        ends_at=NOW + ends if ends is not None else None,
        created_at=NOW - timedelta(days=2),
        updated_at=NOW - timedelta(days=2),
        allowed_org_ids=(AUDIENCE,),
        reserved_unit_ids=(U,),
        released_unit_ids=released,
    )


def refusal(reservations: list[Reservation], org: str, tier: Tier) -> str | None:
    node = NodeSnapshot(Node("node-a", "org-acme"), reservations=tuple(reservations))
    return unit_refusal(U, node, org, tier, NOW)


# --- row 1: an active reservation, inside its term -----------------------------------------


@pytest.mark.parametrize("tier", ALL_TIERS)
def test_active_reservation_is_open_to_its_audience_at_any_tier(tier):
    assert refusal([reservation()], AUDIENCE, tier) is None


def test_active_reservation_is_open_to_anyone_at_spot_on_a_released_unit():
    assert refusal([reservation(released=(U,))], OUTSIDER, Tier.SPOT) is None


def test_active_reservation_refuses_spot_on_a_unit_it_has_not_released():
    reason = refusal([reservation()], OUTSIDER, Tier.SPOT)
    assert reason == "reservation res-1 has not released the unit to the spot market"


def test_active_reservation_refuses_an_outsider_on_demand_even_on_a_released_unit():
    reason = refusal([reservation(released=(U,))], OUTSIDER, Tier.ON_DEMAND)
    assert reason == "reservation res-1 holds the unit: others may place only at tier spot"


def test_active_reservation_refuses_an_outsider_at_tier_reserved():
    reason = refusal([reservation(released=(U,))], OUTSIDER, Tier.RESERVED)
    assert reason == "tier reserved needs this org in the audience of reservation res-1"


# --- row 2: a needs-review reservation ------------------------------------------------------


@pytest.mark.parametrize("org", [AUDIENCE, OUTSIDER])
@pytest.mark.parametrize("tier", ALL_TIERS)
def test_needs_review_withholds_the_unit_from_everybody(org, tier):
    under_review = reservation(ReservationStatus.NEEDS_REVIEW, released=(U,))
    assert refusal([under_review], org, tier) == (
        "reservation res-1 is under review: the unit is withheld"
    )


# --- row 3: nothing now, a pending reservation later ---------------------------------------


def pending() -> Reservation:
    return reservation(ReservationStatus.PENDING, starts=timedelta(days=3))


@pytest.mark.parametrize("tier", [Tier.SPOT, Tier.ON_DEMAND])
def test_pending_reservation_lets_its_audience_place_now(tier):
    assert refusal([pending()], AUDIENCE, tier) is None


def test_pending_reservation_lets_anyone_place_spot_now():
    assert refusal([pending()], OUTSIDER, Tier.SPOT) is None


def test_pending_reservation_refuses_an_outsider_on_demand():
    reason = refusal([pending()], OUTSIDER, Tier.ON_DEMAND)
    assert reason == (
        "reservation res-1 holds the unit from 2026-12-02T12:00:00Z: only its audience may "
        "place there, others only at tier spot"
    )


def test_a_stored_active_reservation_before_its_start_counts_as_pending():
    early = reservation(ReservationStatus.ACTIVE, released=(U,), starts=timedelta(days=3))
    assert refusal([early], OUTSIDER, Tier.SPOT) is None
    assert refusal([early], AUDIENCE, Tier.ON_DEMAND) is None
    assert refusal([early], OUTSIDER, Tier.ON_DEMAND) == (
        "reservation res-1 holds the unit from 2026-12-02T12:00:00Z: only its audience may "
        "place there, others only at tier spot"
    )


def test_every_pending_reservation_must_admit_a_non_spot_workload():
    later = replace(pending(), id="res-2", starts_at=NOW + timedelta(days=40), allowed_org_ids=())
    reason = refusal([pending(), later], AUDIENCE, Tier.ON_DEMAND)
    assert reason is not None
    assert reason.startswith("reservation res-2 holds the unit")


# --- row 4: nothing holds the unit ----------------------------------------------------------


@pytest.mark.parametrize("tier", [Tier.SPOT, Tier.ON_DEMAND])
def test_a_unit_nothing_holds_is_open_to_anyone(tier):
    assert refusal([], OUTSIDER, tier) is None


@pytest.mark.parametrize(
    "ended",
    [
        reservation(ReservationStatus.CANCELLED),
        reservation(ReservationStatus.ACTIVE, starts=timedelta(days=-30), ends=timedelta(days=-1)),
    ],
    ids=["cancelled", "expired"],
)
def test_cancelled_and_expired_reservations_hold_nothing(ended):
    assert refusal([ended], OUTSIDER, Tier.ON_DEMAND) is None


# --- tier reserved needs a governing active reservation of the org -------------------------


@pytest.mark.parametrize(
    "reservations",
    [[], [pending()]],
    ids=["nothing", "pending"],
)
def test_tier_reserved_needs_an_active_reservation_governing_the_unit(reservations):
    assert refusal(reservations, AUDIENCE, Tier.RESERVED) == (
        "tier reserved needs an active reservation of this org governing the unit"
    )


# --- the unit must be free, and on the node, and sellable ----------------------------------


def snapshot(*units: Unit, reservations: tuple[Reservation, ...] = ()) -> NodeSnapshot:
    return NodeSnapshot(Node("node-a", "org-acme"), units, reservations)


def unit(unit_id: str = U, **overrides: object) -> Unit:
    return replace(Unit(unit_id, "vfio-group", "h100", 1, True), **overrides)  # type: ignore[arg-type]


def test_a_claimed_unit_is_unavailable_whatever_the_table_says():
    claimed = snapshot(unit(claimed_by="vm:vm-17"))
    assert unavailable(claimed, [U], OUTSIDER, Tier.SPOT, NOW) == [
        PlacementRefusal(U, "unit is claimed by vm:vm-17")
    ]


def test_unavailable_judges_each_named_unit_and_leaves_unknown_ones_to_not_sellable():
    other = "0000:05:00.0"
    node = snapshot(unit(), unit(other), reservations=(reservation(),))
    refused = unavailable(node, [other, U, "0000:0f:00.0"], OUTSIDER, Tier.SPOT, NOW)
    assert refused == [
        PlacementRefusal(U, "reservation res-1 has not released the unit to the spot market")
    ]


def test_not_sellable_names_units_off_the_node_and_units_not_sellable_with_their_reason():
    units = [
        unit(),
        unit("0000:0a:00.0", sellable=False, not_sellable_reason="held for the host"),
        unit("0000:0b:00.0", sellable=False),
    ]
    named = ["0000:0f:00.0", U, "0000:0a:00.0", "0000:0b:00.0"]
    assert not_sellable(named, units) == [
        PlacementRefusal("0000:0f:00.0", "unit is not on this node"),
        PlacementRefusal("0000:0a:00.0", "unit is not sellable: held for the host"),
        PlacementRefusal("0000:0b:00.0", "unit is not sellable"),
    ]


def test_the_write_conditions_on_the_reservations_governing_a_named_unit_only():
    statuses = {status: replace(reservation(status), id=f"res-{status.value}")
                for status in ReservationStatus}  # fmt: skip
    later = reservation(starts=timedelta(days=3), reservation_id="res-later")
    ended = reservation(
        starts=timedelta(days=-9), ends=timedelta(days=-1), reservation_id="res-ended"
    )
    elsewhere = replace(reservation(), id="res-elsewhere", reserved_unit_ids=("0000:05:00.0",))
    node = snapshot(unit(), reservations=(*statuses.values(), later, ended, elsewhere))
    # Active in its term (a stored pending one whose term began, too), and in review: what
    # a reclaim or a re-affirm may change.
    assert [r.id for r in reservations_read(node, [U], NOW)] == [
        "res-active", "res-needs-review", "res-pending",
    ]  # fmt: skip


def test_a_units_long_history_adds_nothing_to_the_write():
    history = [
        reservation(
            starts=timedelta(days=-7 * (n + 2)),
            ends=timedelta(days=-7 * (n + 1)),
            reservation_id=f"res-{n:03}",
        )
        for n in range(150)
    ] + [replace(reservation(ReservationStatus.CANCELLED), id=f"res-c{n}") for n in range(50)]
    node = snapshot(unit(), reservations=(*history, reservation(reservation_id="res-now")))
    assert [r.id for r in reservations_read(node, [U], NOW)] == ["res-now"]
