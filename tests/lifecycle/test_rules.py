"""Effective status, term, reservability, governance and visibility: pure rules."""

from datetime import UTC, datetime, timedelta

import pytest

from reservations.capacity.rules.access import may_manage_capacity
from reservations.kernel.caller import Caller
from reservations.kernel.ids import is_resource_id
from reservations.nodes.ids import normalize_unit_id
from reservations.nodes.models.partition import (
    Node,
    NodeSnapshot,
    Reservation,
    ReservationStatus,
    Unit,
)
from reservations.nodes.rules.access import may_list_units
from reservations.nodes.rules.status import effective_status, in_term
from reservations.nodes.rules.units import governing_reservation, is_released, not_reservable_reason

pytestmark = pytest.mark.disable_socket

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
S = ReservationStatus
U4, U5, U6 = "0000:04:00.0", "0000:05:00.0", "0000:06:00.0"
# At generation 3: 04 changed (in what a reservation is sold) at 3, 06 at 1, 05 as
# registered; 07 is no longer on the node.
NODE = Node("node-a", "org-owner", topology_gen=3, unit_changed_at={U4: 3, U5: 0, U6: 1})


def res(status=S.ACTIVE, start=-1.0, end: float | None = 1.0, rid="res-1", **kw) -> Reservation:
    return Reservation(
        id=rid,
        node_id="node-a",
        status=status,
        starts_at=NOW + timedelta(days=start),
        ends_at=None if end is None else NOW + timedelta(days=end),
        created_at=NOW,
        updated_at=NOW,
        **kw,
    )


# (stored, start, end) -> effective status. Each table is one test: `make mutate` runs a
# few tests of each file that reaches a rule, and a table must be judged whole.
STATUS_TABLE = [
    (S.PENDING, 1, 2, S.PENDING),
    (S.PENDING, 0, 2, S.ACTIVE),  # startsAt is inclusive
    (S.PENDING, -1, None, S.ACTIVE),
    (S.PENDING, -2, -1, S.EXPIRED),
    (S.ACTIVE, -1, 0, S.EXPIRED),  # endsAt is exclusive
    (S.ACTIVE, -1, None, S.ACTIVE),  # open-ended never expires
    (S.ACTIVE, 1, 2, S.ACTIVE),  # stored active before its start stays active
    (S.CANCELLED, -1, 1, S.CANCELLED),
    (S.CANCELLED, -2, -1, S.CANCELLED),
    (S.NEEDS_REVIEW, -2, 1, S.NEEDS_REVIEW),
    (S.NEEDS_REVIEW, 1, 2, S.NEEDS_REVIEW),
    (S.NEEDS_REVIEW, -2, -1, S.EXPIRED),  # an ended review governs nothing
    (S.NEEDS_REVIEW, -2, 0, S.EXPIRED),
    (S.NEEDS_REVIEW, -2, None, S.NEEDS_REVIEW),
    (S.EXPIRED, -1, 1, S.EXPIRED),
]


def test_effective_status_over_its_table():
    answers = {row[:3]: effective_status(res(*row[:3]), NODE, NOW) for row in STATUS_TABLE}
    assert answers == {row[:3]: row[3] for row in STATUS_TABLE}


# (stored, units, topologyGen, start, end) -> effective status, against NODE's generations.
REVIEW_TABLE = [
    # A unit changed after the generation it was sold at: under review, pending too.
    (S.ACTIVE, (U4,), 2, -1, 1, S.NEEDS_REVIEW),
    (S.PENDING, (U4, U5), 2, 1, 2, S.NEEDS_REVIEW),
    (S.ACTIVE, (U4,), 3, -1, 1, S.ACTIVE),  # sold on the changed unit: nothing to review
    (S.ACTIVE, (U5,), 2, -1, 1, S.ACTIVE),  # its own unit did not change
    (S.ACTIVE, (U5,), None, -1, 1, S.ACTIVE),
    (S.ACTIVE, (U4,), None, -1, 1, S.NEEDS_REVIEW),  # no generation: older than any change
    (S.ACTIVE, (U6,), None, -1, 1, S.NEEDS_REVIEW),  # ... the first one too
    (S.ACTIVE, (U6,), 1, -1, 1, S.ACTIVE),
    (S.ACTIVE, (U5, "0000:07:00.0"), 3, -1, 1, S.NEEDS_REVIEW),  # a unit no longer there
    (S.ACTIVE, (U4,), 2, -2, -1, S.EXPIRED),  # the term is over: nothing to review
    (S.CANCELLED, (U4,), 2, -1, 1, S.CANCELLED),
    (S.EXPIRED, (U4,), 2, -1, 1, S.EXPIRED),
]


def test_needs_review_is_derived_from_the_generations_its_units_changed_at():
    def status(stored, units, gen, start, end):
        reservation = res(stored, start, end, reserved_unit_ids=units, topology_gen=gen)
        return effective_status(reservation, NODE, NOW)

    answers = {row[:5]: status(*row[:5]) for row in REVIEW_TABLE}
    assert answers == {row[:5]: row[5] for row in REVIEW_TABLE}


def test_a_node_item_without_generations_reviews_nothing_but_what_is_stored():
    legacy = Node("node-a", "org-owner", topology_gen=3)
    gone = res(reserved_unit_ids=("0000:06:00.0",), topology_gen=1)
    assert effective_status(gone, legacy, NOW) is S.ACTIVE
    assert effective_status(res(S.NEEDS_REVIEW), legacy, NOW) is S.NEEDS_REVIEW


@pytest.mark.parametrize(
    ("start", "end", "inside"),
    [(-1, 1, True), (0, 1, True), (-1, 0, False), (1, 2, False), (-1, None, True)],
)
def test_in_term_is_half_open(start, end, inside):
    assert in_term(res(start=start, end=end), NOW) is inside


def unit(**kw) -> Unit:
    base = {
        "id": "0000:04:00.0",
        "alloc_class": "vfio-group",
        "gpu_model_id": "m",
        "sellable_gpus": 1,
        "sellable": True,
    }
    base.update(kw)
    return Unit(**base)


@pytest.mark.parametrize(
    ("kw", "reason"),
    [
        ({}, None),
        ({"alloc_class": "device-request"}, None),
        ({"alloc_class": "mig"}, "allocation class mig is not reservable"),
        ({"alloc_class": "host"}, "allocation class host is not reservable"),
        ({"sellable": False}, "unit is not sellable"),
        (
            {"sellable": False, "not_sellable_reason": "held for the host"},
            "unit is not sellable: held for the host",
        ),
    ],
)
def test_reservability(kw, reason):
    assert not_reservable_reason(unit(**kw)) == reason


def test_governing_reservation_is_active_or_needs_review_holding_the_unit():
    held = ("0000:04:00.0",)
    candidates = [
        res(S.CANCELLED, rid="res-a", reserved_unit_ids=held),
        res(S.PENDING, start=1, end=2, rid="res-b", reserved_unit_ids=held),
        res(S.ACTIVE, start=-3, end=-2, rid="res-c", reserved_unit_ids=held),
        res(S.ACTIVE, rid="res-d", reserved_unit_ids=("0000:05:00.0",)),
    ]
    fresh = Node("node-a", "org-owner", topology_gen=3, unit_changed_at={U4: 0, U5: 0})
    assert governing_reservation("0000:04:00.0", candidates, fresh, NOW) is None
    live = res(S.NEEDS_REVIEW, rid="res-e", reserved_unit_ids=held, released_unit_ids=held)
    governed = governing_reservation("0000:04:00.0", [*candidates, live], fresh, NOW)
    assert governed == (live, S.NEEDS_REVIEW)
    assert is_released(live, S.NEEDS_REVIEW, "0000:04:00.0") is False
    assert is_released(live, S.ACTIVE, "0000:04:00.0") is True
    assert is_released(live, S.ACTIVE, "0000:05:00.0") is False


def test_an_ended_review_governs_nothing_whichever_id_sorts_first():
    """An ended review (stored needs-review, past endsAt) and the live reservation sold on
    the same unit since: the live one governs, whether its id sorts before or after."""
    held = (U4,)
    ended = res(S.NEEDS_REVIEW, start=-9, end=-1, rid="res-b", reserved_unit_ids=held)
    for live_id in ("res-a", "res-c"):
        live = res(S.ACTIVE, rid=live_id, reserved_unit_ids=held, topology_gen=3)
        assert governing_reservation(U4, [ended, live], NODE, NOW) == (live, S.ACTIVE)


def snapshot(*reservations: Reservation) -> NodeSnapshot:
    return NodeSnapshot(node=Node(id="node-a", owner_org_id="org-owner"), reservations=reservations)


READ = frozenset({"reservation.read"})
CAP = frozenset({"reservation.capacity"})


def caller(org: str, perms=READ, operator=False) -> Caller:
    return Caller(key_id="k", org_id=org, permissions=perms, platform_operator=operator)


def test_list_visibility():
    managed = res(managing_org_ids=("org-broker",), allowed_org_ids=("org-lab",))
    snap = snapshot(managed)
    assert may_list_units(caller("org-platform", operator=True), snap, NOW)
    assert may_list_units(caller("org-owner"), snap, NOW)
    assert may_list_units(caller("org-broker"), snap, NOW)
    assert not may_list_units(caller("org-lab"), snap, NOW)
    assert not may_list_units(caller("org-owner", perms=CAP), snap, NOW)
    assert not may_list_units(caller("org-platform", perms=frozenset(), operator=True), snap, NOW)
    expired = res(start=-3, end=-2, managing_org_ids=("org-broker",))
    assert not may_list_units(caller("org-broker"), snapshot(expired), NOW)


def test_capacity_permission_for_reclaim():
    managed = res(managing_org_ids=("org-broker",), allowed_org_ids=("org-lab",))
    snap = snapshot(managed)
    assert may_manage_capacity(caller("org-broker", CAP), snap, managed)
    assert may_manage_capacity(caller("org-owner", CAP), snap, managed)
    assert may_manage_capacity(caller("org-x", CAP, operator=True), snap, managed)
    assert not may_manage_capacity(caller("org-broker", READ), snap, managed)
    assert not may_manage_capacity(caller("org-lab", CAP), snap, managed)


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("node-a1", True),
        ("n", True),
        ("a" * 128, True),
        ("a" * 129, False),
        ("-a", False),
        ("a b", False),
        ("", False),
        ("a/b", False),
        ("NODE#x", False),
    ],
)
def test_resource_ids(value, ok):
    assert is_resource_id(value) is ok


def test_unit_ids_are_pci_addresses_compared_case_insensitively():
    assert normalize_unit_id("0000:0A:00.0") == "0000:0a:00.0"
    for bad in ("0000:0a:00", "000:0a:00.0", "0000:0g:00.0", "0000:0a:00.0 ", ""):
        assert normalize_unit_id(bad) is None
