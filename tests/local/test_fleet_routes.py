"""Which of a fleet file's reservations and workloads the loader makes by the API's rules
(create, release, place) and which it stores as stated — and that the reason it gives is
the rule that refused."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devstack import fleet_documents as f
from reservations_tools.fleet.api_rules import Route
from reservations_tools.fleet.loader import main, routes
from reservations_tools.fleet.model import parse_fleet

pytestmark = pytest.mark.disable_socket

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
U4, U5, U6, HOST = "0000:04:00.0", "0000:05:00.0", "0000:06:00.0", "0000:0a:00.0"


def at(**delta: float) -> str:
    return f.iso(NOW + timedelta(**delta))


def made(reservations: list[dict[str, Any]], workloads: list[dict[str, Any]] = ()) -> dict:
    """Route of each reservation and workload of one node, by id."""
    units = [f.unit(U4), f.unit(U5), f.unit(U6),
             f.unit(HOST, allocClass="host", sellable=False, notSellableReason="the host's")]  # fmt: skip
    document = f.fleet([f.node("node-a", units, reservations, list(workloads))])
    return {route.id: route for route in routes(parse_fleet(json.dumps(document)), NOW)}


def now_res(res_id: str = "res-1", units: list[str] = (U4,), **fields: Any) -> dict[str, Any]:
    """A reservation a create at NOW makes: it starts now."""
    term = {"startsAt": at(), "endsAt": at(days=30)} | fields
    return f.reservation(res_id, list(units), **term)


def test_what_a_create_and_a_release_could_make_now_is_made_by_them():
    routes_ = made([now_res(releasedUnitIds=[U4]),
                    now_res("res-2", [U5], status="pending", startsAt=at(days=1)),
                    now_res("res-3", [U6], startsAt=at(minutes=-4))])  # fmt: skip
    assert [(r.rules, r.because) for r in routes_.values()] == [
        ("create, release", None), ("create", None), ("create", None),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("reservation", "because"),
    [
        (now_res(startsAt=at(minutes=-6)),
         "invalid_request: startsAt: must not be more than 5 minutes in the past"),
        (now_res(status="needs-review"), "status needs-review: only a topology change makes it"),
        (now_res(status="cancelled"), "status cancelled: only a cancel makes it"),
        (now_res(status="expired"), "status expired: only the end of its term makes it"),
        (now_res(startsAt=at(days=1)),
         "status active, but a create at the load time makes it pending"),
        (now_res(status="pending"), "status pending, but a create at the load time makes it active"),
        (now_res(topologyGen=2), "topologyGen 2, but the node's is 1"),
        (now_res(allowedOrgIds=[]), "invalid_request: allowedOrgIds: "),
        (now_res(units=[HOST]), "units_not_reservable: unitIds[0]: 0000:0a:00.0: "),
        (now_res(createdAt=at(days=-1)), "the file gives its createdAt or updatedAt"),
        (now_res(status="pending", startsAt=at(days=1), releasedUnitIds=[U4]),
         "reservation_not_active: reservation res-1 is pending"),
    ],
)  # fmt: skip
def test_a_reservation_no_api_call_could_make_now_is_stored_as_stated_saying_why(
    reservation, because
):
    route = made([reservation])["res-1"]
    assert route.rules is None
    assert route.because.startswith(because)


def test_a_reservation_overlapping_an_earlier_one_names_the_holder():
    routes_ = made([now_res("res-1", [U4, U5]), now_res("res-2", [U5])])
    assert routes_["res-1"].rules == "create"
    assert routes_["res-2"].because == (
        "units_unavailable: unitIds[0]: 0000:05:00.0: held by reservation res-1 (active) "
        f"until {at(days=30)}"
    )


BACKDATED = f.reservation("res-old", [U4, U5], startsAt=at(days=-10), endsAt=at(days=300),
                          releasedUnitIds=[U4])  # fmt: skip


@pytest.mark.parametrize(
    ("workload", "rules", "because"),
    [
        (f.workload("vm-1", [U4]), "place", None),  # spot on a lent unit of a stated reservation
        (f.workload("vm-1", [U6], tier="on-demand"), "place", None),  # nothing holds it
        (f.workload("vm-1", [U5], tier="reserved", orgId="org-lab"), "place", None),
        (f.workload("vm-1", [U5]), None,
         "units_unavailable: unitIds[0]: 0000:05:00.0: reservation res-old has not released the "
         "unit to the spot market"),
        (f.workload("vm-1", [U6], tier="reserved"), None,
         "units_unavailable: unitIds[0]: 0000:06:00.0: tier reserved needs an active reservation"),
        (f.workload("vm-1", [HOST], tier="on-demand"), None,
         "units_not_sellable: unitIds[0]: 0000:0a:00.0: unit is not sellable: the host's"),
        (f.workload("vm-1", [U4], state="terminating"), None,
         "state terminating: only a reclaim makes it"),
        (f.workload("vm-1", [U4], state="terminated"), None,
         "state terminated: only a termination's report makes it"),
    ],
)  # fmt: skip
def test_a_running_workload_is_placed_where_placement_admits_it(workload, rules, because):
    route = made([BACKDATED], [workload])["vm-1"]
    assert (route.rules, route.because and route.because[: len(because)]) == (rules, because)
    assert made([BACKDATED], [workload])["res-old"].because.startswith("invalid_request: startsAt")


def test_a_unit_under_review_is_withheld_from_placement():
    routes_ = made([now_res(status="needs-review")], [f.workload("vm-1", [U4])])
    assert routes_["vm-1"].because == (
        "units_unavailable: unitIds[0]: 0000:04:00.0: reservation res-1 is under review: "
        "the unit is withheld"
    )


def test_a_route_reads_as_one_line():
    assert str(Route("node-a", "workload", "vm-1", rules="place")) == (
        "node node-a, workload vm-1: by place"
    )
    assert str(Route("node-a", "reservation", "res-1", because="status cancelled: …")) == (
        "node node-a, reservation res-1: as stated: status cancelled: …"
    )


def test_validate_counts_the_routes_and_explains_each_on_request(tmp_path, capsys):
    path = tmp_path / "fleet.json"
    document = f.fleet([f.node("node-a", [f.unit(U4), f.unit(U5)], [BACKDATED],
                               [f.workload("vm-1", [U4]), f.workload("vm-2", [U5])])])  # fmt: skip
    path.write_text(json.dumps(document))
    assert main(["validate", str(path)]) == 0
    assert capsys.readouterr().out == (
        f"{path}: valid (1 nodes, 5 API keys; reservations: 0 by the API's rules, 1 as stated; "
        "workloads: 1 by the API's rules, 1 as stated)\n"
    )
    assert main(["validate", str(path), "--explain"]) == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    assert lines[0].startswith("  node node-a, reservation res-old: as stated: invalid_request")
    assert lines[1:] == [
        "  node node-a, workload vm-1: by place",
        "  node node-a, workload vm-2: as stated: units_unavailable: unitIds[0]: 0000:05:00.0: "
        "reservation res-old has not released the unit to the spot market",
    ]
