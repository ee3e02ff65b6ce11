"""A list filter (``status``, ``state``, ``types``) is read the same whether its values come
comma-separated (``status=a,b``, as the document declares: ``style: form, explode: false``)
or with the name repeated (``status=a&status=b``, as generated clients send an array, and
as API Gateway hands it on: ``queryStringParameters`` joined with commas, the raw query
string as sent)."""

from __future__ import annotations

from datetime import UTC, datetime
from types import ModuleType
from typing import Any
from urllib.parse import urlencode

import pytest

from devstack import fleet_documents as f
from devstack.api_events import list_event, workloads_event
from devstack.functions import invoke, load_function
from tests.support.event_scenario import node_feed_event, org_feed_event
from tests.support.ports import swap_ports

pytestmark = pytest.mark.moto

OWNER = "Bearer vl_local_test_owner"
FEEDS = {"key": "vl_local_test_feeds", "orgId": "org-platform",
         "permissions": ["reservation.read", "events.read"]}  # fmt: skip
UNITS = ["0000:01:00.0", "0000:02:00.0", "0000:03:00.0"]


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    names = ("list_reservations", "list_workloads", "node_events", "org_events")
    return {name: load_function(name) for name in names}


@pytest.fixture
def node(load_fleet: Any) -> str:
    load_fleet(
        f.fleet([
            f.node(
                "node-a1",
                [f.unit(u) for u in UNITS],
                [
                    f.reservation("res-a", UNITS[:1]),
                    f.reservation("res-p", UNITS[1:2], startsAt=f.days(5)),
                    f.reservation("res-x", UNITS[2:], status="cancelled"),
                ],
                [f.workload("vm-1", UNITS[:1])],
            )
        ], extra_keys=[FEEDS])
    )  # fmt: skip
    return "node-a1"


def _repeated(event: dict[str, Any], name: str, values: list[str]) -> dict[str, Any]:
    """The event as API Gateway builds it from ``name=v1&name=v2``."""
    return event | {
        "rawQueryString": urlencode([(name, value) for value in values]),
        "queryStringParameters": {name: ",".join(values)},
    }


def _answer(function: ModuleType, event: dict[str, Any]) -> tuple[int, Any]:
    result = invoke(function, event)
    return result.status, result.body


def test_repeated_status_names_list_what_the_comma_separated_status_does(functions, node):
    statuses = ["active", "pending"]
    one = list_event(node, OWNER, {"status": ",".join(statuses)})
    status, page = _answer(functions["list_reservations"], one)
    assert status == 200
    assert [item["id"] for item in page["items"]] == ["res-a", "res-p"]
    repeated = _repeated(list_event(node, OWNER), "status", statuses)
    assert _answer(functions["list_reservations"], repeated) == (200, page)


def test_a_repeated_status_is_checked_like_one_list(functions, node):
    repeated = _repeated(list_event(node, OWNER), "status", ["active", "lent"])
    status, body = _answer(functions["list_reservations"], repeated)
    assert status == 400
    assert body["code"] == "invalid_request"
    assert [d["field"] for d in body["details"]] == ["status"]


def test_repeated_state_names_list_what_the_comma_separated_state_does(functions, node):
    states = ["running", "terminating"]
    one = workloads_event(node, OWNER, {"state": ",".join(states)})
    status, page = _answer(functions["list_workloads"], one)
    assert status == 200
    assert [item["id"] for item in page["items"]] == ["vm-1"]
    repeated = _repeated(workloads_event(node, OWNER), "state", states)
    assert _answer(functions["list_workloads"], repeated) == (200, page)


@pytest.mark.parametrize("feed", ["node_events", "org_events"])
def test_repeated_types_read_the_feed_as_the_comma_separated_types_do(
    functions, node, feed, monkeypatch
):
    types = ["reservation.created", "reservation.cancelled"]
    now = datetime.now(UTC)  # one reader's clock: an end-of-feed cursor names its horizon
    swap_ports(monkeypatch, functions[feed], clock=lambda: now)

    def event(query: dict[str, str] | None = None) -> dict[str, Any]:
        if feed == "node_events":
            return node_feed_event(node, "Bearer vl_local_test_feeds", query)
        return org_feed_event("Bearer vl_local_test_feeds", query)

    one = _answer(functions[feed], event({"types": ",".join(types)}))
    assert one[0] == 200
    assert _answer(functions[feed], _repeated(event(), "types", types)) == one
    unknown = _answer(functions[feed], _repeated(event(), "types", [types[0], "no.such"]))
    assert unknown[0] == 400
