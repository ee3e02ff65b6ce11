"""GET /v1/nodes/{nodeId}/reservations/units, in-process over moto: every row of the contract."""

from __future__ import annotations

from collections import Counter
from types import ModuleType
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import event_file, list_units_event
from devstack.functions import invoke, load_function
from tests.support.bodies import comparable, unidentified

pytestmark = pytest.mark.moto

OWNER = "Bearer vl_local_test_owner"


@pytest.fixture(scope="module")
def handler() -> ModuleType:
    return load_function("list_units")


def get(handler: ModuleType, node_id: str, key: str | None) -> Any:
    return invoke(handler, list_units_event(node_id, key))


def _mixed_node() -> dict[str, Any]:
    units = [
        f.unit("0000:05:00.0"),
        f.unit("0000:04:00.0"),  # out of order on purpose: the response sorts by id
        f.unit("0000:06:00.0", allocClass="device-request", gpuModelName=None),
        f.unit(
            "0000:0a:00.0", allocClass="host", sellable=False, notSellableReason="held for the host"
        ),
        f.unit("0000:0b:00.0", allocClass="mig"),
        f.unit("0000:0c:00.0", sellable=False),
        f.unit("0000:0d:00.0", allocClass="mig", sellable=False, notSellableReason="broken"),
    ]
    for u in units:
        if u.get("gpuModelName") is None:
            u.pop("gpuModelName", None)
    reservations = [
        f.reservation(
            "res-active", ["0000:04:00.0", "0000:05:00.0"], releasedUnitIds=["0000:04:00.0"]
        ),
        f.reservation(
            "res-review",
            ["0000:06:00.0"],
            status="needs-review",
            releasedUnitIds=["0000:06:00.0"],
            managingOrgIds=["org-reviewer"],
        ),
    ]
    workloads = [
        f.workload("vm-1", ["0000:04:00.0"]),
        f.workload(
            "pod-2",
            ["0000:06:00.0"],
            kind="pod",
            state="terminating",  # only spot workloads are ever terminated
            terminationId="term-1",
        ),
    ]
    return f.node("node-a", units, reservations, workloads)


def test_owner_sees_every_unit_sorted_with_each_field_as_the_contract_says(handler, load_fleet):
    load_fleet(f.fleet([_mixed_node()]))
    result = get(handler, "node-a", OWNER)
    assert result.status == 200
    assert result.headers["content-type"] == "application/json"
    assert result.body == [
        {
            "id": "0000:04:00.0",
            "allocClass": "vfio-group",
            "gpuModelId": "nvidia-h100-sxm5-80gb",
            "gpuModelName": "NVIDIA H100 SXM5 80GB",
            "sellableGpus": 1,
            "state": "claimed",
            "claimedBy": "vm:vm-1",
            "reservable": True,
            "reservationId": "res-active",
            "released": True,
            # What a spot workload placed there now would be promised (no policy: nothing).
            "promisedNoticeSeconds": 0,
            "promisedMinRunSeconds": 0,
        },
        {
            "id": "0000:05:00.0",
            "allocClass": "vfio-group",
            "gpuModelId": "nvidia-h100-sxm5-80gb",
            "gpuModelName": "NVIDIA H100 SXM5 80GB",
            "sellableGpus": 1,
            "state": "free",
            "reservable": True,
            "reservationId": "res-active",
            "released": False,
        },
        {
            "id": "0000:06:00.0",
            "allocClass": "device-request",
            "gpuModelId": "nvidia-h100-sxm5-80gb",
            "sellableGpus": 1,
            "state": "claimed",
            "claimedBy": "pod:pod-2",
            "reservable": True,
            "reservationId": "res-review",
            "released": False,
        },
        {
            "id": "0000:0a:00.0",
            "allocClass": "host",
            "gpuModelId": "nvidia-h100-sxm5-80gb",
            "gpuModelName": "NVIDIA H100 SXM5 80GB",
            "sellableGpus": 1,
            "state": "free",
            "reservable": False,
            "notReservableReason": "unit is not sellable: held for the host; "
            "allocation class host is not reservable",
        },
        {
            "id": "0000:0b:00.0",
            "allocClass": "mig",
            "gpuModelId": "nvidia-h100-sxm5-80gb",
            "gpuModelName": "NVIDIA H100 SXM5 80GB",
            "sellableGpus": 1,
            "state": "free",
            "reservable": False,
            "notReservableReason": "allocation class mig is not reservable",
        },
        {
            "id": "0000:0c:00.0",
            "allocClass": "vfio-group",
            "gpuModelId": "nvidia-h100-sxm5-80gb",
            "gpuModelName": "NVIDIA H100 SXM5 80GB",
            "sellableGpus": 1,
            "state": "free",
            "reservable": False,
            "notReservableReason": "unit is not sellable",
        },
        {
            "id": "0000:0d:00.0",
            "allocClass": "mig",
            "gpuModelId": "nvidia-h100-sxm5-80gb",
            "gpuModelName": "NVIDIA H100 SXM5 80GB",
            "sellableGpus": 1,
            "state": "free",
            "reservable": False,
            "notReservableReason": (
                "unit is not sellable: broken; allocation class mig is not reservable"
            ),
        },
    ]


@pytest.mark.parametrize(
    ("status", "starts", "ends", "governs", "released"),
    [
        ("active", -10, 300, True, True),
        ("active", -10, None, True, True),  # open-ended never expires
        ("pending", -1, 300, True, True),  # started: effectively active
        ("pending", 5, 300, False, None),  # not yet started
        ("active", -300, -1, False, None),  # past endsAt: expired
        ("pending", -300, -1, False, None),  # started and ended: expired
        ("expired", -300, -1, False, None),
        ("cancelled", -10, 300, False, None),
        ("needs-review", -10, 300, True, False),  # withholds its units from the spot market
    ],
)
def test_governing_reservation_and_released_follow_the_effective_status(
    handler, load_fleet, status, starts, ends, governs, released
):
    res = f.reservation(
        "res-1",
        ["0000:04:00.0"],
        status=status,
        startsAt=f.days(starts),
        releasedUnitIds=["0000:04:00.0"],
    )
    if ends is None:
        res.pop("endsAt")
    else:
        res["endsAt"] = f.days(ends)
    load_fleet(f.fleet([f.node("node-a", [f.unit("0000:04:00.0")], [res])]))
    [unit] = get(handler, "node-a", OWNER).body
    assert unit.get("reservationId") == ("res-1" if governs else None)
    assert unit.get("released") is released


@pytest.mark.parametrize(
    ("who", "visible"),
    [("operator", True), ("owner", True), ("broker", True), ("lab", False), ("stranger", False)],
)
def test_who_may_read_a_node(handler, load_fleet, who, visible):
    load_fleet(
        f.fleet(
            [f.node("node-a", [f.unit("0000:04:00.0")], [f.reservation("res-1", ["0000:04:00.0"])])]
        )
    )
    key = f.KEYS[who][0]
    result = get(handler, "node-a", f"Bearer {key}")
    assert result.status == (200 if visible else 404)


@pytest.mark.parametrize(
    ("status", "starts", "ends", "visible"),
    [
        ("pending", 5, 300, True),
        ("active", -10, 300, True),
        ("needs-review", -10, 300, True),
        ("active", -300, -1, False),  # expired
        ("cancelled", -10, 300, False),
    ],
)
def test_managers_see_the_node_only_while_their_reservation_is_live(
    handler, load_fleet, status, starts, ends, visible
):
    res = f.reservation(
        "res-1", ["0000:04:00.0"], status=status, startsAt=f.days(starts), endsAt=f.days(ends)
    )
    load_fleet(f.fleet([f.node("node-a", [f.unit("0000:04:00.0")], [res])]))
    assert get(handler, "node-a", "Bearer vl_local_test_broker").status == (200 if visible else 404)


def test_managing_a_reservation_on_another_node_grants_nothing(handler, load_fleet):
    load_fleet(
        f.fleet(
            [
                f.node(
                    "node-a", [f.unit("0000:04:00.0")], [f.reservation("res-1", ["0000:04:00.0"])]
                ),
                f.node("node-b", [f.unit("0000:04:00.0")], owner="org-other"),
            ]
        )
    )
    assert get(handler, "node-a", "Bearer vl_local_test_broker").status == 200
    assert get(handler, "node-b", "Bearer vl_local_test_broker").status == 404


def _not_found_cases(load_fleet) -> None:
    load_fleet(
        f.fleet(
            [
                f.node(
                    "node-a", [f.unit("0000:04:00.0")], [f.reservation("res-1", ["0000:04:00.0"])]
                )
            ],
            extra_keys=[
                {
                    "key": "vl_local_test_capacity_only",
                    "orgId": "org-acme",
                    "permissions": ["reservation.capacity"],
                },
                {"key": "vl_local_test_no_permissions", "orgId": "org-platform", "permissions": []},
            ],
        )
    )


@pytest.mark.parametrize(
    ("node_id", "key"),
    [
        ("node-zz", OWNER),  # unknown node
        ("node-a", "Bearer vl_local_test_stranger"),  # not visible
        ("node-a", "Bearer vl_local_test_lab"),  # audience only
        ("node-a", "Bearer vl_local_test_capacity_only"),  # lacks reservation.read
        ("node-a", "Bearer vl_local_test_no_permissions"),  # operator org, no permission
        ("-node-a", OWNER),  # malformed: leading dash
        ("node a", OWNER),  # malformed: space
        ("n" * 129, OWNER),  # malformed: too long
        ("node-a%00", OWNER),  # malformed: encoded NUL
        ("NODE#node-a", OWNER),  # malformed: key-like
    ],
)
def test_every_404_is_byte_for_byte_the_same(handler, load_fleet, node_id, key):
    _not_found_cases(load_fleet)
    reference = get(handler, "node-zz", OWNER)
    result = get(handler, node_id, key)
    assert comparable(result) == comparable(reference)
    assert result.status == 404
    assert unidentified(result.body) == {"error": "not found", "code": "not_found"}


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "vl_local_test_owner",  # no scheme
        "Basic dXNlcjpwYXNz",
        "Bearer",
        "Bearer ",
        "Bearer test_owner",  # not a vl_ key
        "Bearer vl_local_test_owner extra",
        "Bearer vl_unknown_key",
        "Bearer vl_local_test_revoked",
        "Bearer vl_local_test_expired",
        "Bearer vl_tëst",  # not ASCII
    ],
)
def test_every_401_has_the_contract_shape_and_challenge(handler, load_fleet, authorization):
    load_fleet(
        f.fleet(
            [f.node("node-a", [f.unit("0000:04:00.0")])],
            extra_keys=[
                {
                    "key": "vl_local_test_revoked",
                    "orgId": "org-acme",
                    "permissions": f.BOTH,
                    "revoked": True,
                },
                {
                    "key": "vl_local_test_expired",
                    "orgId": "org-acme",
                    "permissions": f.BOTH,
                    "expiresAt": f.days(-1),
                },
            ],
        )
    )
    result = get(handler, "node-a", authorization)
    assert result.status == 401
    assert result.headers["www-authenticate"] == "Bearer"
    assert unidentified(result.body) == {
        "error": "missing or invalid API key",
        "code": "unauthorized",
    }


def test_401_comes_before_404(handler, load_fleet):
    load_fleet(f.fleet([f.node("node-a", [f.unit("0000:04:00.0")])]))
    assert get(handler, "node-zz", None).status == 401
    assert get(handler, "-bad-", "Bearer vl_nope_nope").status == 401


def test_scheme_is_case_insensitive_and_a_future_expiry_is_fine(handler, load_fleet):
    load_fleet(
        f.fleet(
            [f.node("node-a", [f.unit("0000:04:00.0")])],
            extra_keys=[
                {
                    "key": "vl_local_test_later",
                    "orgId": "org-acme",
                    "permissions": f.BOTH,
                    "expiresAt": f.days(1),
                }
            ],
        )
    )
    assert get(handler, "node-a", "bearer vl_local_test_owner").status == 200
    assert get(handler, "node-a", "Bearer vl_local_test_later").status == 200


def test_an_empty_node_answers_an_empty_array(handler, load_fleet):
    load_fleet(f.fleet([f.node("node-a", [])]))
    result = get(handler, "node-a", OWNER)
    assert (result.status, result.body) == (200, [])


def test_one_query_per_request_once_the_key_is_cached(handler, load_fleet, dynamodb_calls):
    load_fleet(f.fleet([f.node("node-a", [f.unit("0000:04:00.0")])]))
    get(handler, "node-a", OWNER)
    assert dynamodb_calls == Counter({"GetItem": 1, "Query": 1})
    dynamodb_calls.clear()
    for _ in range(3):
        assert get(handler, "node-a", OWNER).status == 200
    assert dynamodb_calls == Counter({"Query": 3})


def test_a_key_without_the_permission_costs_no_query(handler, load_fleet, dynamodb_calls):
    _not_found_cases(load_fleet)
    get(handler, "node-a", "Bearer vl_local_test_capacity_only")
    assert "Query" not in dynamodb_calls


def test_unknown_routes_and_methods_answer_the_same_404(handler, load_fleet):
    load_fleet(f.fleet([f.node("node-a", [f.unit("0000:04:00.0")])]))
    reference = get(handler, "node-zz", OWNER)
    event = list_units_event("node-a", OWNER)
    event["requestContext"]["http"]["method"] = "DELETE"
    deleted = invoke(handler, event)
    event = list_units_event("node-a", OWNER)
    event["rawPath"] = event["requestContext"]["http"]["path"] = "/v1/nodes/node-a/other"
    other = invoke(handler, event)
    for result in (deleted, other):
        assert (result.status, result.body_text) == (reference.status, reference.body_text)


def test_an_internal_failure_answers_500_without_internals(handler, load_fleet, aws):
    load_fleet(f.fleet([f.node("node-a", [f.unit("0000:04:00.0")])]))
    get(handler, "node-a", OWNER)  # caches the key
    aws.delete_table(TableName="ReservationsTable")
    result = get(handler, "node-a", OWNER)
    assert result.status == 500
    assert unidentified(result.body) == {"error": "internal error", "code": "internal"}
    assert "Traceback" not in result.body_text
    assert "ResourceNotFound" not in result.body_text


@pytest.mark.parametrize(
    ("event_name", "status"),
    [("allowed", 200), ("no_key", 401), ("stranger", 404), ("unknown_node", 404)],
)
def test_the_sam_local_events_against_the_demo_fleet(handler, load_fleet, event_name, status):
    load_fleet(f.demo_fleet())
    result = invoke(handler, event_file(f"list_units/{event_name}.json"))
    assert result.status == status
