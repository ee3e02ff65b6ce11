"""GET /v1/reservations' requests per page, counted at botocore's endpoint: one Query of the
org's fleet index and at most two BatchGetItem (the listed reservations and their nodes,
100 keys a request), the API key cached; the same requests, reading the same items, with 0
and with 10,000 ended reservations in the org's (and the operator's) index."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import fleet_event
from devstack.functions import invoke, load_function
from reservations.kernel.aws.codec import to_attributes
from tests.support.fleet_index import FleetStream

pytestmark = pytest.mark.moto

UNITS = [f"0000:{i:02x}:00.0" for i in range(1, 9)]
BROKER, OPERATOR = "Bearer vl_local_test_broker", "Bearer vl_local_test_operator"


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    return {name: load_function(name) for name in ("list_fleet_reservations", "fleet_indexer")}


def _fleet(aws: Any, load_fleet: Any, functions: dict[str, ModuleType], nodes: int) -> None:
    """``nodes`` nodes, each with 8 live reservations org-broker manages (one a unit)."""
    load_fleet(f.fleet([
        f.node(f"node-{n:03d}", [f.unit(u) for u in UNITS],
               [f.reservation(f"res-{n:03d}-{i}", [u], endsAt=f.days(10 + i))
                for i, u in enumerate(UNITS)])
        for n in range(nodes)
    ]))  # fmt: skip
    FleetStream(aws, functions["fleet_indexer"]).run()


def _ended(aws: Any, count: int) -> None:
    """``count`` ended reservations in org-broker's and the operator's fleet index (as the
    indexer writes them from history items; the live pages never read them)."""
    for org in ("org-broker", "/platform"):
        items = [{
            "PK": f"FLEET#{org}#ended", "SK": f"2026-01-01T00:00:00Z#node-old#res-{i:05d}",
            "nodeId": "node-old", "reservationId": f"res-{i:05d}", "liveness": "ended",
            "status": "cancelled", "version": 1, "roles": ["managing"],
        } for i in range(count)]  # fmt: skip
        for start in range(0, len(items), 25):
            batch = [{"PutRequest": {"Item": to_attributes(i)}} for i in items[start : start + 25]]
            aws.batch_write_item(RequestItems={"ReservationsTable": batch})


def _pages(functions, sent_requests, key: str, limit: str) -> list[tuple[Any, ...]]:
    """Each page's requests and what its Query read, to the end."""
    invoke(functions["list_fleet_reservations"], fleet_event(key, {"limit": "1"}))  # key cached
    pages, cursor = [], None
    while True:
        sent_requests.clear()
        query = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        result = invoke(functions["list_fleet_reservations"], fleet_event(key, query))
        assert result.status == 200
        assert result.body["items"]
        pages.append((tuple(sent_requests.sent), tuple(sent_requests.items_read),
                       len(result.body["items"])))  # fmt: skip
        cursor = result.body.get("nextCursor")
        if cursor is None:
            return pages


@pytest.mark.parametrize("ended", [0, 10_000])
def test_a_page_is_one_query_and_one_batch_get_whatever_the_orgs_past(
    aws, load_fleet, functions, sent_requests, ended
):
    _fleet(aws, load_fleet, functions, nodes=6)  # 48 live reservations
    _ended(aws, ended)
    one = (("dynamodb", "Query"), ("dynamodb", "BatchGetItem"))
    for key in (BROKER, OPERATOR):
        pages = _pages(functions, sent_requests, key, "20")
        assert [p[0] for p in pages] == [one, one, one]
        assert [p[2] for p in pages] == [20, 20, 8]
        # the Query reads the page's entries and one more (is there a next page?), never
        # an ended one
        assert [p[1] for p in pages] == [((21, 21),), ((21, 21),), ((8, 8),)]


def test_a_last_full_page_has_no_cursor(aws, load_fleet, functions, sent_requests):
    _fleet(aws, load_fleet, functions, nodes=5)  # 40: two full pages, no empty third
    assert [p[2] for p in _pages(functions, sent_requests, BROKER, "20")] == [20, 20]


def test_a_page_of_100_on_100_nodes_is_one_query_and_two_batch_gets(
    aws, load_fleet, functions, sent_requests
):
    _fleet(aws, load_fleet, functions, nodes=13)  # 104 reservations, 100 on the first page
    pages = _pages(functions, sent_requests, BROKER, "100")
    two = (("dynamodb", "Query"), ("dynamodb", "BatchGetItem"), ("dynamodb", "BatchGetItem"))
    assert [(p[0], p[2]) for p in pages] == [(two, 100), ((two[0], two[1]), 4)]


def test_a_model_no_reservation_holds_reads_the_index_in_growing_reads_and_nothing_else(
    aws, load_fleet, functions, sent_requests
):
    """320 live reservations, none of the model asked for: the entries say so, so no
    reservation is read, and the page reads on to the index's end in reads four times
    larger each (21, 81, 321 entries asked) rather than 16 reads of a page."""
    _fleet(aws, load_fleet, functions, nodes=40)
    invoke(functions["list_fleet_reservations"], fleet_event(OPERATOR, {"limit": "1"}))
    sent_requests.clear()
    query = {"limit": "20", "gpuModelId": "nvidia-l4"}
    result = invoke(functions["list_fleet_reservations"], fleet_event(OPERATOR, query))
    assert (result.status, result.body) == (200, {"items": []})
    assert sent_requests.sent == [("dynamodb", "Query")] * 3
    assert sent_requests.items_read == [(21, 21), (81, 81), (220, 220)]
    held = {"limit": "20", "gpuModelId": "nvidia-h100-sxm5-80gb"}
    assert len(invoke(functions["list_fleet_reservations"], fleet_event(OPERATOR, held))
               .body["items"]) == 20  # fmt: skip
