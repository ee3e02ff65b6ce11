"""Requests per call for create, PATCH, get and list, counted at botocore's endpoint (every client,
every attempt): a create is 2 DynamoDB requests (Query, TransactWriteItems) with or without
an Idempotency-Key, its replay and a kept refusal too; a PATCH 2 too (Query, TransactWriteItems), one that changes nothing 1 (the Query);
a get 1 (BatchGetItem); a list page 1
(Query, which reads the node's list access with the page whatever its cursor, and derives
the statuses from the unit generations it keeps), each with the API key cached (one GetItem
more when it is not)."""

from __future__ import annotations

from types import ModuleType

import pytest

from devstack import fleet_documents as f
from devstack.api_events import create_event, get_event, list_event, update_event
from devstack.functions import invoke, load_function
from reservations.kernel.http.resolver import key_cache

pytestmark = pytest.mark.moto

OWNER = "Bearer vl_local_test_writer"
WRITER = {"key": "vl_local_test_writer", "orgId": "org-acme",
          "permissions": ["reservation.read", "reservation.write"]}  # fmt: skip
UNITS = [f"0000:{i:02x}:00.0" for i in range(1, 9)]


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    names = ("create_reservation", "get_reservation", "list_reservations")
    return {name: load_function(name) for name in names}


@pytest.fixture
def node(load_fleet):
    """An 8-unit node with 30 reservations of 04 (ended: in the node's history)."""
    ended = [f.reservation(f"res-{i:02d}", [UNITS[3]], status="cancelled") for i in range(30)]
    load_fleet(f.fleet([f.node("node-a", [f.unit(u) for u in UNITS], ended)], extra_keys=[WRITER]))


def _create(functions, units, key=None):
    body = {"unitIds": units, "allowedOrgIds": ["org-lab"]}
    return invoke(functions["create_reservation"], create_event("node-a", body, OWNER, key))


def _warm(functions) -> None:
    invoke(functions["get_reservation"], get_event("node-a", "res-00", OWNER))


@pytest.mark.parametrize("key", [None, "budget-key"])
def test_a_create_is_a_query_and_a_transaction(functions, node, sent_requests, key):
    _warm(functions)
    sent_requests.clear()
    assert _create(functions, UNITS[:4], key).status == 201
    assert sent_requests.sent == [("dynamodb", "Query"), ("dynamodb", "TransactWriteItems")]


def test_a_replayed_create_and_a_kept_refusal_are_two_requests_too(functions, node, sent_requests):
    _warm(functions)
    _create(functions, UNITS[:1], "replayed")
    for units, key, status, last in (
        # Its units are now its own reservation's: the refusal's conditional PutItem meets
        # the first answer's record, and that answer is replayed.
        (UNITS[:1], "replayed", 201, "PutItem"),
        (UNITS[:1], "refused", 409, "PutItem"),
        (UNITS[:1], "refused", 409, "PutItem"),
    ):
        sent_requests.clear()
        assert _create(functions, units, key).status == status
        assert sent_requests.sent == [("dynamodb", "Query"), ("dynamodb", last)]


def test_a_get_is_one_request_warm_and_two_cold(functions, node, sent_requests):
    key_cache.clear()
    sent_requests.clear()
    assert invoke(functions["get_reservation"], get_event("node-a", "res-07", OWNER)).status == 200
    assert sent_requests.sent == [("dynamodb", "GetItem"), ("dynamodb", "BatchGetItem")]
    sent_requests.clear()
    assert invoke(functions["get_reservation"], get_event("node-a", "res-07", OWNER)).status == 200
    assert sent_requests.sent == [("dynamodb", "BatchGetItem")]


def test_a_list_of_live_statuses_is_one_query_of_the_node_partition(functions, node, sent_requests):
    _warm(functions)
    sent_requests.clear()
    query = {"limit": "7", "status": "active,pending,needs-review"}
    result = invoke(functions["list_reservations"], list_event("node-a", OWNER, query))
    assert (result.status, result.body["items"]) == (200, [])
    assert sent_requests.sent == [("dynamodb", "Query")]
    # the node's partition from RES#: the 8 units and the list access (the 30 cancelled
    # reservations are in the node's history)
    assert sent_requests.items_read == [(8 + 1, 8 + 1)]


def test_every_list_page_is_one_query_from_its_cursor_to_the_nodes_list_access(
    functions, node, sent_requests
):
    _warm(functions)
    cursor, pages = None, 0
    while True:
        sent_requests.clear()
        query = {"limit": "7", "status": "cancelled", **({"cursor": cursor} if cursor else {})}
        result = invoke(functions["list_reservations"], list_event("node-a", OWNER, query))
        assert result.status == 200
        assert sent_requests.sent == [("dynamodb", "Query")]  # no read of the node item
        pages += 1
        if pages == 1:  # the node's list index: all 30 reservations and the list access
            assert sent_requests.items_read == [(30 + 1, 30 + 1)]
        cursor = result.body.get("nextCursor")
        if cursor is None:
            break
    assert pages == 5  # 7 + 7 + 7 + 7 + 2


def _patch(reservation_id, body, key=None):
    event = update_event("node-a", reservation_id, body, OWNER, key)
    return invoke(load_function("update_reservation"), event)


@pytest.mark.parametrize("key", [None, "patch-budget"])
def test_a_patch_is_a_query_and_a_transaction_and_a_no_op_a_query_alone(
    functions, node, sent_requests, key
):
    _warm(functions)
    made = _create(functions, UNITS[:1])
    reservation_id = made.body["id"]
    sent_requests.clear()
    body = {"addUnitIds": [UNITS[1]], "reason": "more"}
    assert _patch(reservation_id, body, key).status == 200
    assert sent_requests.sent == [("dynamodb", "Query"), ("dynamodb", "TransactWriteItems")]
    sent_requests.clear()
    assert _patch(reservation_id, {"reason": "more"}).status == 200  # changes nothing
    assert sent_requests.sent == [("dynamodb", "Query")]


@pytest.mark.parametrize("status", [None, "pending,active", "cancelled,active"])
def test_an_audience_whose_one_reservation_sorts_behind_200_others_gets_it_first(
    functions, load_fleet, sent_requests, status
):
    """200 reservations of others (100 live, 100 in the history) sort before the lab's
    one: the lab's first page has it, read by one Query; the owner's page is one Query."""
    others = [
        f.reservation(f"res-a{i:03d}", [UNITS[0]], status="pending", startsAt=f.days(i + 1),
                      endsAt=f.days(i + 1.5), allowedOrgIds=["org-x"], managingOrgIds=[])
        for i in range(100)
    ] + [
        f.reservation(f"res-b{i:03d}", [UNITS[1]], status="cancelled", allowedOrgIds=["org-x"],
                      managingOrgIds=[])
        for i in range(100)
    ]  # fmt: skip
    mine = f.reservation("res-zzz", [UNITS[2]], allowedOrgIds=["org-lab"], managingOrgIds=[])
    node = f.node("node-a", [f.unit(u) for u in UNITS], [*others, mine])
    load_fleet(f.fleet([node], extra_keys=[WRITER]))
    query = {"limit": "5", **({"status": status} if status else {})}
    for key, first in (("Bearer vl_local_test_lab", ["res-zzz"]), (OWNER, None)):
        invoke(functions["list_reservations"], list_event("node-a", key, query))  # key cached
        sent_requests.clear()
        result = invoke(functions["list_reservations"], list_event("node-a", key, query))
        assert result.status == 200
        ids = [item["id"] for item in result.body["items"]]
        if first is not None:
            assert ids == first
            assert "nextCursor" not in result.body
        else:
            assert len(ids) == 5
        assert sent_requests.sent == [("dynamodb", "Query")]
