"""History invariance: every call on a node's present issues the same requests and reads the
same bytes whether the node has no past or 10,000 ended reservations, counted at botocore's
endpoint (every client, every attempt; the bytes are each DynamoDB response's body).

Two nodes alike in everything but their past (ids of the same length, the same units,
reservations and workloads) take the same calls in the same order; the old one has 10,000
ended reservations, loaded into its history by the fleet loader (BatchWriteItem).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import (
    cancel_event,
    create_event,
    end_event,
    list_event,
    list_units_event,
    node_event,
    place_event,
    reaffirm_event,
    reclaim_event,
    release_event,
)
from devstack.functions import invoke, load_function
from reservations.kernel.http.resolver import key_cache
from tests.support import state

pytestmark = pytest.mark.moto

OPERATOR = "Bearer vl_local_test_everything"
EVERYTHING = {
    "key": "vl_local_test_everything",
    "orgId": "org-platform",
    "permissions": [
        "reservation.read",
        "reservation.capacity",
        "reservation.write",
        "workload.place",
        "node.write",
    ],
}
UNITS = [f"0000:{i:02x}:00.0" for i in range(1, 7)]
PAST = 10_000
NAMES = (
    "list_units", "reclaim", "release", "cancel", "create_reservation", "reaffirm",
    "place_workload", "end_workload", "put_node", "list_reservations",
)  # fmt: skip


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    return {name: load_function(name) for name in NAMES}


def _node(node_id: str, past: int) -> dict[str, Any]:
    """res-a holds 01 and 02 (both released, a spot VM on 01), res-c 03, res-r 04 (under
    review), a reserved VM runs on 05; 06 is free."""
    document = f.node(
        node_id,
        [f.unit(u) for u in UNITS],
        [
            f.reservation("res-a", UNITS[:2], releasedUnitIds=UNITS[:2]),
            f.reservation("res-c", [UNITS[2]]),
            f.reservation("res-r", [UNITS[3]], status="needs-review"),
        ],
        [
            f.workload("vm-spot", [UNITS[0]]),
            f.workload("vm-done", [UNITS[4]], tier="on-demand", orgId="org-acme"),
        ],
    )
    return document | {"generatedPastReservations": past}


def calls(node: str) -> list[tuple[str, str, dict[str, Any]]]:
    """Each call on the node's present: its name, its function, its event."""
    spot = {"id": "vm-new", "kind": "vm", "tier": "spot", "orgId": "org-spotbuyer",
            "unitIds": [UNITS[1]]}  # fmt: skip
    create = {"unitIds": [UNITS[5]], "allowedOrgIds": ["org-lab"]}
    put = {"ownerOrgId": "org-acme", "topologyGen": 1, "units": [f.unit(u) for u in UNITS]}
    return [
        ("list units", "list_units", list_units_event(node, OPERATOR)),
        ("dry run", "reclaim", reclaim_event(node, "res-a", _dry([UNITS[0]]), OPERATOR)),
        ("reclaim", "reclaim", reclaim_event(node, "res-a", {"unitIds": [UNITS[0]]}, OPERATOR)),
        ("release", "release", release_event(node, "res-a", {"unitIds": [UNITS[0]]}, OPERATOR)),
        ("create", "create_reservation", create_event(node, create, OPERATOR)),
        ("cancel", "cancel", cancel_event(node, "res-c", None, OPERATOR)),
        ("re-affirm", "reaffirm", reaffirm_event(node, "res-r", {}, OPERATOR)),
        ("place", "place_workload", place_event(node, spot, OPERATOR)),
        ("end", "end_workload", end_event(node, "vm-done", OPERATOR)),
        ("PUT", "put_node", node_event(node, put, OPERATOR)),
    ]


def _dry(units: list[str]) -> dict[str, Any]:
    return {"unitIds": units, "dryRun": True}


Measured = dict[str, tuple[int, list[tuple[str, str]], int]]


def measure(functions: dict[str, ModuleType], node: str, sent_requests: Any) -> Measured:
    """Each call's status, requests and bytes read, on ``node``; each with the API key's
    lookup (one GetItem, the same for every node), whatever a slow machine did to the
    cache."""
    measured: Measured = {}
    for name, function, event in calls(node):
        key_cache.clear()
        sent_requests.clear()
        result = invoke(functions[function], event)
        measured[name] = (result.status, list(sent_requests.sent), sum(sent_requests.bytes_read))
    return measured


def test_every_call_on_the_present_reads_the_same_with_10000_ended_reservations(
    functions, load_fleet, aws, sent_requests
):
    load_fleet(f.fleet([_node("node-new", 0), _node("node-old", PAST)], extra_keys=[EVERYTHING]))
    assert len(state.history(aws, "node-old")) == PAST
    new = measure(functions, "node-new", sent_requests)
    old = measure(functions, "node-old", sent_requests)
    assert [status for status, _, _ in new.values()] == [200, 200, 200, 200, 201, 200, 200,
                                                        201, 204, 200]  # fmt: skip
    for name in new:
        assert old[name] == new[name], name
    # The cancel moved res-c to the history; the present is as small as the other node's.
    assert len(state.partition(aws, "node-old")) == len(state.partition(aws, "node-new"))


def test_the_bytes_counted_are_the_responses(functions, load_fleet, aws, sent_requests):
    """The count sees the partition's size: a node with more units reads more bytes."""
    small = f.node("node-s", [f.unit(u) for u in UNITS[:1]])
    large = f.node("node-l", [f.unit(u) for u in UNITS])
    load_fleet(f.fleet([small, large], extra_keys=[EVERYTHING]))
    read: dict[str, int] = {}
    for node in ("node-s", "node-l"):
        invoke(functions["list_units"], list_units_event(node, OPERATOR))
        sent_requests.clear()
        invoke(functions["list_units"], list_units_event(node, OPERATOR))
        read[node] = sum(sent_requests.bytes_read)
    assert read["node-l"] > read["node-s"] > 0


def _history_page(
    functions: dict[str, ModuleType], node: str, query: dict[str, str], sent_requests: Any
) -> tuple[dict[str, Any], list[tuple[str, str]], int]:
    key_cache.clear()
    sent_requests.clear()
    result = invoke(functions["list_reservations"], list_event(node, OPERATOR, query))
    assert result.status == 200, result.body
    return result.body, list(sent_requests.sent), sum(sent_requests.bytes_read)


def test_a_page_of_history_reads_the_same_with_400_and_with_4000_ended_reservations(
    functions, load_fleet, aws, sent_requests
):
    """A page of the list with ended statuses reads a bounded window of the node's list
    index (then the list access on its own), not up to 1 MB of its past: the same requests
    and bytes for a short past and a ten-times longer one."""
    load_fleet(f.fleet([_node("node-new", 400), _node("node-old", 4_000)],
                       extra_keys=[EVERYTHING]))  # fmt: skip
    query = {"status": "expired,cancelled", "limit": "3"}
    short = _history_page(functions, "node-new", query, sent_requests)
    long = _history_page(functions, "node-old", query, sent_requests)
    assert [item["id"] for item in short[0]["items"]] == [
        "past-000001", "past-000002", "past-000003"]  # fmt: skip
    assert short[0]["nextCursor"]
    key_lookup = ("dynamodb", "GetItem")
    assert short[1] == [key_lookup, ("dynamodb", "Query"), ("dynamodb", "GetItem")]
    assert long[1:] == short[1:]
    # A window's worth, not the node's past: 4,000 items would be over 1 MB.
    assert short[2] < 100_000


def test_paging_through_a_long_past_shows_every_reservation_once(
    functions, load_fleet, aws, sent_requests
):
    """Pages of at most a window each, from cursor to cursor: every reservation, live and
    ended, once and in order; the last page reaches the list access and has no cursor."""
    load_fleet(f.fleet([_node("node-old", 250)], extra_keys=[EVERYTHING]))
    seen: list[str] = []
    query = {"limit": "100"}
    while True:
        page, requests, _ = _history_page(functions, "node-old", query, sent_requests)
        seen += [item["id"] for item in page["items"]]
        if "nextCursor" not in page:
            assert requests[-1] == ("dynamodb", "Query")  # the access item came with it
            break
        query = {"limit": "100", "cursor": page["nextCursor"]}
    expected = sorted([f"past-{i:06d}" for i in range(1, 251)] + ["res-a", "res-c", "res-r"])
    assert seen == expected
