"""Every route answers 401 for a missing or unknown key before any 404, however malformed
its path ids: nothing about a path is answered before the caller is known.

Malformed here includes characters no route pattern of the resolver takes (``"``, ``#``,
a snowman): API Gateway routes such a path to the function by its shape, and the function
must still ask for the key first. An empty path id is the ``$default`` route's 404."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import (
    cancel_event,
    create_event,
    end_event,
    get_event,
    list_event,
    list_units_event,
    node_event,
    place_event,
    reaffirm_event,
    reclaim_event,
    release_event,
)
from devstack.functions import invoke, load_function
from tests.support.bodies import unidentified

pytestmark = pytest.mark.moto

UNIT = "0000:04:00.0"
BODY = {"unitIds": [UNIT]}
MALFORMED = ['a"b', "a#b", "\N{SNOWMAN}", "bad id", "-starts-badly", "n" * 129, "a\\b", "a`b"]
NOT_ONE_KEY = [None, "Bearer vl_local_test_unknown_key", "Basic dmw6eA=="]
OWNER = "Bearer vl_local_test_owner"

# Each route's function, and its event for (node id, second path id or None, authorization).
Event = Callable[[str, str, str | None], dict[str, Any]]
ROUTES: dict[str, tuple[str, Event, bool]] = {
    "GET units": ("list_units", lambda n, _, a: list_units_event(n, a), False),
    "POST reclaim": ("reclaim", lambda n, r, a: reclaim_event(n, r, BODY, a), True),
    "POST release": ("release", lambda n, r, a: release_event(n, r, BODY, a), True),
    "POST cancel": ("cancel", lambda n, r, a: cancel_event(n, r, None, a), True),
    "POST reaffirm": ("reaffirm", lambda n, r, a: reaffirm_event(n, r, None, a), True),
    "POST create": ("create_reservation", lambda n, _, a: create_event(n, BODY, a), False),
    "GET reservation": ("get_reservation", lambda n, r, a: get_event(n, r, a), True),
    "GET reservations": ("list_reservations", lambda n, _, a: list_event(n, a), False),
    "PUT node": ("put_node", lambda n, _, a: node_event(n, {}, a), False),
    "POST workload": ("place_workload", lambda n, _, a: place_event(n, {}, a), False),
    "DELETE workload": ("end_workload", lambda n, w, a: end_event(n, w, a), True),
}


def malformed_paths(two_ids: bool) -> list[tuple[str, str]]:
    paths = [(bad, "res-1") for bad in MALFORMED]
    if two_ids:
        paths += [("node-a", bad) for bad in MALFORMED]
    return paths


@pytest.fixture
def fleet(load_fleet: Any) -> None:
    load_fleet(f.fleet([f.node("node-a", [f.unit(UNIT)], [f.reservation("res-1", [UNIT])])]))


@pytest.mark.parametrize("route", ROUTES)
def test_no_key_or_an_unknown_one_is_401_before_any_404_for_a_malformed_path(fleet, route):
    name, event, two_ids = ROUTES[route]
    function = load_function(name)
    answers = {}
    for node_id, second_id in malformed_paths(two_ids):
        for authorization in NOT_ONE_KEY:
            result = invoke(function, event(node_id, second_id, authorization))
            answers[(node_id, second_id, authorization)] = (
                result.status,
                result.body["code"],
                result.headers.get("www-authenticate"),
            )
    assert set(answers.values()) == {(401, "unauthorized", "Bearer")}, answers


@pytest.mark.parametrize("route", ROUTES)
def test_a_known_key_on_a_malformed_path_is_the_one_404(fleet, route):
    name, event, two_ids = ROUTES[route]
    function = load_function(name)
    for node_id, second_id in malformed_paths(two_ids):
        result = invoke(function, event(node_id, second_id, OWNER))
        assert (result.status, unidentified(result.body)) == (
            404,
            {"error": "not found", "code": "not_found"},
        )
        assert "www-authenticate" not in result.headers


@pytest.mark.parametrize("route", [r for r in ROUTES if ROUTES[r][2]])
def test_an_empty_path_id_is_the_default_routes_404_whatever_the_key(fleet, route):
    name, event, _ = ROUTES[route]
    result = invoke(load_function(name), event("node-a", "", None))
    assert (result.status, result.body["code"]) == (404, "not_found")
