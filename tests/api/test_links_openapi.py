"""The OpenAPI document's links: what a client (or a stateful fuzzer) calls next on what a
create made. Create reservation's 201 leads to get, release, reclaim and cancel; place
workload's 201 to get and end; a subscription's to get, rotate, its deliveries and delete. Every link names an operation of the document and fills
each of its path's ids, from the request's path or the success body's ``id``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from devstack.openapi import SPEC
from reservations import endpoints
from reservations.kernel.http import routes
from tests.support.bodies import resolved

DOCUMENT: dict[str, Any] = json.loads(SPEC.read_text())
OPERATIONS = {
    operation["operationId"]: (path, operation)
    for path, operations in DOCUMENT["paths"].items()
    for operation in operations.values()
}


def _links(operation_id: str, status: str) -> dict[str, Any]:
    _, operation = OPERATIONS[operation_id]
    links: dict[str, Any] = operation["responses"][status].get("links", {})
    return links


def _path_ids(operation_id: str) -> set[str]:
    _, operation = OPERATIONS[operation_id]
    return {p["name"] for p in operation["parameters"] if p["in"] == "path"}


def test_create_reservation_leads_to_get_release_reclaim_change_and_cancel():
    links = _links("createReservation", "201")
    assert {link["operationId"] for link in links.values()} == {
        "getReservation", "releaseUnits", "reclaimUnits", "cancelReservation",
        "updateReservation",
    }  # fmt: skip
    for link in links.values():
        assert link["parameters"] == {
            "nodeId": "$request.path.nodeId",
            "reservationId": "$response.body#/id",
        }


@pytest.mark.parametrize("status", ["201", "202"])
def test_place_workload_leads_to_get_and_end(status):
    links = _links("placeWorkload", status)
    assert {link["operationId"] for link in links.values()} == {"getWorkload", "endWorkload"}
    for link in links.values():
        assert link["parameters"] == {
            "nodeId": "$request.path.nodeId",
            "workloadId": "$response.body#/id",
        }


def test_a_subscription_leads_to_get_rotate_deliveries_and_delete():
    links = _links("createWebhook", "201")
    assert {link["operationId"] for link in links.values()} == {
        "getWebhook", "rotateWebhookSecret", "listWebhookDeliveries", "deleteWebhook",
    }  # fmt: skip
    for link in links.values():
        assert link["parameters"] == {"subscriptionId": "$response.body#/id"}


def test_every_link_fills_every_path_id_of_an_operation_from_what_is_known():
    linked = 0
    for operation_id, (_, operation) in OPERATIONS.items():
        for status, response in operation["responses"].items():
            for link in response.get("links", {}).values():
                linked += 1
                target = link["operationId"]
                assert target in OPERATIONS, (operation_id, target)
                assert set(link["parameters"]) == _path_ids(target), (operation_id, target)
                success = resolved(DOCUMENT, response["content"]["application/json"]["schema"])
                for expression in link["parameters"].values():
                    if expression.startswith("$request.path."):
                        assert expression.removeprefix("$request.path.") in _path_ids(operation_id)
                    else:  # the made thing's id: always in the success body
                        assert expression == "$response.body#/id"
                        assert "id" in success["required"], operation_id
                route = routes_by_id()[operation_id]
                successes = {route.status, *([202] if route.accepted else [])}
                assert int(status) in successes
    assert linked == 13  # placeWorkload's 202 (a waiting workload) links get and end too


def routes_by_id() -> dict[str, routes.ApiRoute]:
    return {route.operation_id: route for route in endpoints.ALL}
