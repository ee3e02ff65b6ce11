"""An ended review governs nothing: past its ``endsAt`` a ``needs-review`` reservation is
``expired`` for every endpoint alike (reads, list units, placement, create, release,
reclaim, cancel, re-affirm), in-process over moto.

On 04 a review ended yesterday (res-b) and a live reservation sold since; which id sorts
first used to decide which of the two governed 04, so the live one is res-a or res-c. On
05 only the ended review ever held the unit."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import (
    cancel_event,
    create_event,
    get_event,
    list_event,
    list_units_event,
    place_event,
    reaffirm_event,
    reclaim_event,
    release_event,
)
from devstack.functions import invoke, load_function

pytestmark = pytest.mark.moto

U4, U5 = "0000:04:00.0", "0000:05:00.0"
OPERATOR, BROKER, REVIEWER = (
    "Bearer vl_local_test_operator",
    "Bearer vl_local_test_broker",
    "Bearer vl_local_test_rev",
)
KEYS = [
    {"key": "vl_local_test_writer", "orgId": "org-acme",
     "permissions": ["reservation.read", "reservation.write"]},
    {"key": "vl_local_test_placer", "orgId": "org-platform", "permissions": ["workload.place"]},
    {"key": "vl_local_test_node_op", "orgId": "org-platform", "permissions": ["node.write"]},
    {"key": "vl_local_test_rev", "orgId": "org-reviewer",
     "permissions": ["reservation.read", "reservation.capacity"]},
]  # fmt: skip
ENDED = "res-b"


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    names = ("get_reservation", "list_reservations", "list_units", "place_workload",
             "create_reservation", "release", "reclaim", "cancel", "reaffirm")  # fmt: skip
    return {name: load_function(name) for name in names}


@pytest.fixture(params=["res-a", "res-c"])
def live(request: pytest.FixtureRequest, load_fleet: Any) -> str:
    """The live reservation's id: sorting before, or after, the ended review's."""
    ended = f.reservation(
        ENDED, [U4, U5], status="needs-review", startsAt=f.days(-30), endsAt=f.days(-1),
        managingOrgIds=["org-reviewer"], releasedUnitIds=[U5],
    )  # fmt: skip
    sold_since = f.reservation(
        request.param, [U4], startsAt=f.days(-0.5), allowedOrgIds=["org-new"]
    )
    node = f.node("node-a", [f.unit(U4), f.unit(U5)], [ended, sold_since])
    load_fleet(f.fleet([node], KEYS))
    return str(request.param)


def call(functions: dict[str, ModuleType], name: str, event: dict[str, Any]) -> Any:
    return invoke(functions[name], event)


def place(functions, unit_id: str, org: str, tier: str, workload_id: str = "vm-1") -> Any:
    body = {"id": workload_id, "kind": "vm", "tier": tier, "orgId": org, "unitIds": [unit_id]}
    return call(
        functions, "place_workload", place_event("node-a", body, "Bearer vl_local_test_placer")
    )


def test_it_reads_as_expired_and_lists_as_expired(functions, live):
    got = call(functions, "get_reservation", get_event("node-a", ENDED, OPERATOR))
    assert (got.status, got.body["status"]) == (200, "expired")
    for wanted, listed in (("needs-review", []), ("expired", [ENDED])):
        page = call(functions, "list_reservations",
                    list_event("node-a", OPERATOR, {"status": wanted})).body  # fmt: skip
        assert [r["id"] for r in page["items"]] == listed


def test_list_units_shows_the_live_reservation_governing_and_nothing_on_the_other(functions, live):
    units = call(functions, "list_units", list_units_event("node-a", OPERATOR)).body
    governed = {u["id"]: (u.get("reservationId"), u.get("released")) for u in units}
    assert governed == {U4: (live, False), U5: (None, None)}


def test_its_manager_no_longer_sees_the_node(functions, live):
    assert call(functions, "list_units", list_units_event("node-a", REVIEWER)).status == 404


def test_placement_is_not_withheld_by_it(functions, live):
    # 05: nothing governs it, nothing holds it later: open to anyone.
    assert place(functions, U5, "org-spotbuyer", "on-demand").status == 201
    # 04: the live reservation's audience places there, at tier reserved.
    assert place(functions, U4, "org-new", "reserved", "vm-2").status == 201


def test_the_live_reservations_release_opens_its_unit_to_spot(functions, live):
    lent = call(functions, "release",
                release_event("node-a", live, {"unitIds": [U4]}, BROKER))  # fmt: skip
    assert lent.status == 200
    assert place(functions, U4, "org-spotbuyer", "spot").status == 201


def test_create_does_not_count_it_as_holding_the_unit(functions, live):
    body = {"unitIds": [U5], "allowedOrgIds": ["org-other"]}
    made = call(functions, "create_reservation",
                create_event("node-a", body, "Bearer vl_local_test_writer"))  # fmt: skip
    assert made.status == 201, made.body


@pytest.mark.parametrize(
    ("name", "event", "code"),
    [
        ("release", release_event("node-a", ENDED, {"unitIds": [U4]}, REVIEWER),
         "reservation_not_active"),
        ("reclaim", reclaim_event("node-a", ENDED, {"unitIds": [U5]}, REVIEWER),
         "reservation_not_active"),
        ("cancel", cancel_event("node-a", ENDED, None, "Bearer vl_local_test_writer"),
         "reservation_not_active"),
        ("reaffirm", reaffirm_event("node-a", ENDED, None, "Bearer vl_local_test_node_op"),
         "reservation_not_in_review"),
    ],
)  # fmt: skip
def test_no_write_acts_on_it(functions, live, name, event, code):
    answer = call(functions, name, event)
    assert (answer.status, answer.body["code"]) == (409, code)
    assert "expired" in answer.body["error"]
