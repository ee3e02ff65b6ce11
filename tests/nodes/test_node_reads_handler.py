"""``GET /v1/nodes/{nodeId}``, ``GET /v1/nodes/{nodeId}/workloads`` and
``GET /v1/nodes/{nodeId}/workloads/{workloadId}`` through their Lambda handlers over moto:
who sees what (operator and owner everything, a workload's org its own, anyone else the one
404), the list's paging (limit, signed cursor, state filter, empty parameter = absent),
and what each read costs (the node one GetItem, a workload one BatchGetItem, a page one
Query).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import node_get_event, workload_get_event, workloads_event
from devstack.functions import invoke, load_function
from tests.support.bodies import unidentified

pytestmark = pytest.mark.moto

OPERATOR = "Bearer vl_local_test_operator"
OWNER = "Bearer vl_local_test_owner"
BROKER = "Bearer vl_local_test_broker"
LAB = "Bearer vl_local_test_lab"
STRANGER = "Bearer vl_local_test_stranger"
SPOT = "Bearer vl_local_test_spot"
NO_READ = "Bearer vl_local_test_no_read"
UNITS = ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0", "0000:07:00.0", "0000:08:00.0"]


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    return {name: load_function(name) for name in ("get_node", "list_workloads", "get_workload")}


@pytest.fixture
def fleet(load_fleet: Any, aws: Any) -> None:
    workloads = [
        f.workload("vm-a", [UNITS[0]]),
        f.workload("vm-b", [UNITS[2], UNITS[1]]),
        f.workload("vm-lab", [UNITS[3]], tier="on-demand", orgId="org-lab"),
        f.workload("vm-t", [UNITS[4]], state="terminating", terminationId="t-1"),
    ]
    keys = [
        {"key": "vl_local_test_spot", "orgId": "org-spotbuyer", "permissions": f.BOTH},
        {"key": "vl_local_test_no_read", "orgId": "org-acme", "permissions": []},
    ]
    other = f.node("node-b", [f.unit(UNITS[0])], owner="org-broker")
    held = f.reservation("res-1", [UNITS[4]])  # a terminating workload was on its units
    node = f.node("node-a", [f.unit(u) for u in UNITS], [held], workloads)
    load_fleet(f.fleet([node, other], extra_keys=keys))
    # What a reclaim writes with the termination (a fleet file states only its id).
    aws.update_item(
        TableName="ReservationsTable",
        Key={"PK": {"S": "NODE#node-a"}, "SK": {"S": "WL#vm-t"}},
        UpdateExpression="SET terminationReservationId = :r, terminationRequestedAt = :t",
        ExpressionAttributeValues={":r": {"S": "res-1"}, ":t": {"S": "2026-11-30T10:00:00Z"}},
    )


def get_node(functions, node: str, key: str | None) -> Any:
    return invoke(functions["get_node"], node_get_event(node, key))


def listing(functions, key: str | None, node: str = "node-a", **query: str) -> Any:
    return invoke(functions["list_workloads"], workloads_event(node, key, query))


def get_workload(functions, workload: str, key: str | None, node: str = "node-a") -> Any:
    return invoke(functions["get_workload"], workload_get_event(node, workload, key))


def ids(result: Any) -> list[str]:
    return [item["id"] for item in result.body["items"]]


def same_404(results: list[Any]) -> None:
    """Each the one 404: the same status, headers and body but for the request's id."""
    first = results[0]
    for result in results:
        assert result.status == 404, result.body
        assert unidentified(result.body) == {"error": "not found", "code": "not_found"}
        assert result.headers | {"x-request-id": ""} == first.headers | {"x-request-id": ""}


# --- GET /v1/nodes/{nodeId} --------------------------------------------------------------


def test_the_owner_and_the_operator_get_the_node_as_put_answers_it(functions, fleet):
    for key in (OWNER, OPERATOR):
        result = get_node(functions, "node-a", key)
        assert result.status == 200, result.body
        body = result.body
        assert set(body) == {"id", "ownerOrgId", "topologyGen", "unitIds", "createdAt", "updatedAt"}
        assert (body["id"], body["ownerOrgId"], body["unitIds"]) == ("node-a", "org-acme", UNITS)


def test_anyone_else_gets_the_one_404(functions, fleet):
    same_404(
        [
            get_node(functions, "node-nowhere", OPERATOR),
            get_node(functions, "node-a", BROKER),  # manages nothing here, and no owner
            get_node(functions, "node-a", SPOT),  # runs workloads on it: still not its node
            get_node(functions, "node-b", OWNER),  # another org's node
            get_node(functions, "node-a", NO_READ),  # the owner's org, without the permission
            get_node(functions, "-bad!", OPERATOR),
        ]
    )
    assert get_node(functions, "node-a", None).status == 401


def test_getting_a_node_is_one_get_item(functions, fleet, dynamodb_calls):
    assert get_node(functions, "node-a", OWNER).status == 200  # the key is cached now
    dynamodb_calls.clear()
    assert get_node(functions, "node-a", OWNER).status == 200
    assert dynamodb_calls == {"GetItem": 1}


# --- GET /v1/nodes/{nodeId}/workloads ------------------------------------------------------


def test_the_owner_sees_every_workload_sorted_and_as_place_answers_them(functions, fleet):
    result = listing(functions, OWNER)
    assert result.status == 200, result.body
    assert ids(result) == ["vm-a", "vm-b", "vm-lab", "vm-t"]
    assert "nextCursor" not in result.body
    by_id = {item["id"]: item for item in result.body["items"]}
    assert by_id["vm-b"].pop("createdAt")  # as the fleet loaded it
    assert by_id["vm-b"] == {
        "id": "vm-b", "nodeId": "node-a", "kind": "vm", "tier": "spot",
        "orgId": "org-spotbuyer", "unitIds": [UNITS[1], UNITS[2]], "state": "running",
        "promisedNoticeSeconds": 0, "promisedMinRunSeconds": 0,
    }  # fmt: skip
    assert by_id["vm-t"]["state"] == "terminating"
    assert by_id["vm-t"]["termination"] == {
        "id": "t-1", "reservationId": "res-1", "requestedAt": "2026-11-30T10:00:00Z",
        "terminateAt": "2026-11-30T10:00:00Z",  # stored before notices: due at its request
    }  # fmt: skip
    assert listing(functions, OPERATOR).body == result.body


def test_a_workloads_org_sees_its_own_and_an_org_with_none_the_404(functions, fleet):
    assert ids(listing(functions, SPOT)) == ["vm-a", "vm-b", "vm-t"]
    assert ids(listing(functions, LAB)) == ["vm-lab"]
    same_404(
        [
            listing(functions, STRANGER),
            listing(functions, BROKER),
            listing(functions, OWNER, node="node-nowhere"),
            listing(functions, NO_READ),
            listing(functions, OWNER, node="-bad!"),
        ]
    )


def test_pages_follow_the_cursor_to_the_end(functions, fleet):
    first = listing(functions, OWNER, limit="3")
    assert ids(first) == ["vm-a", "vm-b", "vm-lab"]
    second = listing(functions, OWNER, limit="3", cursor=first.body["nextCursor"])
    assert ids(second) == ["vm-t"]
    assert "nextCursor" not in second.body
    exact = listing(functions, OWNER, limit="4")
    assert "nextCursor" not in exact.body  # no empty last page


def test_the_state_filter_and_empty_parameters(functions, fleet):
    assert ids(listing(functions, OWNER, state="terminating")) == ["vm-t"]
    assert ids(listing(functions, OWNER, state="running, terminating")) == ids(
        listing(functions, OWNER)
    )
    assert listing(functions, OWNER, state="", limit="", cursor="").body == (
        listing(functions, OWNER).body
    )
    assert listing(functions, LAB, state="terminating").body == {"items": []}  # sees vm-lab


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"limit": "1.5"}, "limit"),
        ({"state": "ended"}, "state"),
        ({"cursor": "not-a-cursor"}, "cursor"),
    ],
)
def test_a_bad_parameter_is_a_400_naming_it(functions, fleet, query, field):
    result = listing(functions, OWNER, **query)
    assert (result.status, result.body["code"]) == (400, "invalid_request")
    assert [detail["field"] for detail in result.body["details"]] == [field]


def test_a_cursor_is_bound_to_its_list_and_its_org(functions, fleet):
    cursor = listing(functions, OWNER, limit="1").body["nextCursor"]
    assert listing(functions, OPERATOR, limit="1", cursor=cursor).status == 400  # another org
    assert listing(functions, OWNER, limit="1", state="running", cursor=cursor).status == 400
    tampered = cursor[:-2] + ("A" if cursor[-2] != "A" else "B") + cursor[-1]
    assert listing(functions, OWNER, limit="1", cursor=tampered).status == 400


def test_a_cursor_is_no_authority(functions, fleet, aws):
    spot = listing(functions, SPOT, limit="1").body["nextCursor"]
    for name in ("vm-a", "vm-b", "vm-t"):  # the spot buyer's workloads end
        aws.delete_item(
            TableName="ReservationsTable",
            Key={"PK": {"S": "NODE#node-a"}, "SK": {"S": f"WL#{name}"}},
        )
    assert listing(functions, SPOT, limit="1", cursor=spot).status == 404


def test_a_page_is_one_query(functions, fleet, dynamodb_calls):
    first = listing(functions, OWNER, limit="2")  # the keys are cached now
    assert listing(functions, SPOT, limit="1").status == 200
    dynamodb_calls.clear()
    assert listing(functions, SPOT, limit="1").status == 200
    assert dynamodb_calls == {"Query": 1}
    dynamodb_calls.clear()
    assert listing(functions, OWNER, limit="2", cursor=first.body["nextCursor"]).status == 200
    assert dynamodb_calls == {"Query": 1}


# --- GET /v1/nodes/{nodeId}/workloads/{workloadId} -----------------------------------------


def test_a_workload_is_read_by_the_operator_the_owner_and_its_own_org(functions, fleet):
    listed = {item["id"]: item for item in listing(functions, OWNER).body["items"]}
    for key in (OPERATOR, OWNER, SPOT):
        result = get_workload(functions, "vm-t", key)
        assert result.status == 200, result.body
        assert result.body == listed["vm-t"]
    assert get_workload(functions, "vm-lab", LAB).body == listed["vm-lab"]


def test_a_workload_anyone_else_may_not_see_is_the_one_404(functions, fleet):
    same_404(
        [
            get_workload(functions, "vm-nowhere", OWNER),
            get_workload(functions, "vm-lab", SPOT),  # another org's workload
            get_workload(functions, "vm-a", LAB),
            get_workload(functions, "vm-a", STRANGER),
            get_workload(functions, "vm-a", NO_READ),
            get_workload(functions, "vm-a", OWNER, node="node-b"),  # on another node
            get_workload(functions, "bad id!", OWNER),
        ]
    )
    assert get_workload(functions, "vm-a", None).status == 401


def test_getting_a_workload_is_one_batch_get(functions, fleet, dynamodb_calls):
    assert get_workload(functions, "vm-a", SPOT).status == 200  # the key is cached now
    dynamodb_calls.clear()
    assert get_workload(functions, "vm-a", SPOT).status == 200
    assert dynamodb_calls == {"BatchGetItem": 1}
