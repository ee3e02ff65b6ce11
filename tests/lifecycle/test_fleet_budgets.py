"""GET /v1/reservations' requests per page, counted at botocore's endpoint: one Query of the
org's fleet index and at most two BatchGetItem (the listed reservations and their nodes,
100 keys a request), the API key cached; the same requests, reading the same items, with 0
and with 10,000 ended reservations in the org's (and the operator's) index."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import fleet_event
from devstack.functions import HttpResult, invoke, load_function
from reservations.kernel.aws.codec import to_attributes
from reservations.kernel.http.resolver import key_cache
from reservations.lifecycle.rules.fleet import index_entries
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
    """320 live reservations, none of the model asked for: the entries say so, so the
    index returns none of them and no reservation is read, and the page reads on to the
    index's end in reads four times larger each (21, 84, 336 entries asked) rather than
    16 reads of a page."""
    _fleet(aws, load_fleet, functions, nodes=40)
    invoke(functions["list_fleet_reservations"], fleet_event(OPERATOR, {"limit": "1"}))
    sent_requests.clear()
    query = {"limit": "20", "gpuModelId": "nvidia-l4"}
    result = invoke(functions["list_fleet_reservations"], fleet_event(OPERATOR, query))
    assert (result.status, result.body) == (200, {"items": []})
    assert sent_requests.sent == [("dynamodb", "Query")] * 3
    assert sent_requests.items_read == [(0, 21), (0, 84), (0, 215)]
    held = {"limit": "20", "gpuModelId": "nvidia-h100-sxm5-80gb"}
    assert len(invoke(functions["list_fleet_reservations"], fleet_event(OPERATOR, held))
               .body["items"]) == 20  # fmt: skip


def _managed_only(aws: Any, count: int) -> None:
    """``count`` pending reservations org-broker manages and is the audience of none, in
    its index as the indexer writes them (:func:`index_entries`, from their items), ending
    among the few of :func:`_few` (a page must read past them to find those)."""
    images = ({
        "PK": f"NODE#node-bulk-{i // 100:03d}", "SK": f"RES#res-bulk-{i:05d}",
        "id": f"res-bulk-{i:05d}", "nodeId": f"node-bulk-{i // 100:03d}", "status": "pending",
        "startsAt": f.days(5), "endsAt": f"2031-{1 + i % 12:02d}-01T00:00:00Z",
        "managingOrgIds": ["org-broker"], "allowedOrgIds": ["org-lab"], "version": 1,
        "reservedUnitIds": [UNITS[0]],
    } for i in range(count))  # fmt: skip
    entries = [
        e for image in images for (pk, _), e in index_entries(image, "org-acme").items()
        if pk == "FLEET#org-broker#live"
    ]  # fmt: skip
    for start in range(0, len(entries), 25):
        batch = [{"PutRequest": {"Item": to_attributes(e)}} for e in entries[start : start + 25]]
        aws.batch_write_item(RequestItems={"ReservationsTable": batch})


def _few(load_fleet: Any) -> None:
    """On node-few, org-broker is the audience of two reservations, and one is under
    review (stored): each ends in the middle of the bulk's ends."""
    load_fleet(f.fleet([f.node("node-few", [f.unit(u) for u in UNITS], [
        f.reservation("res-few-0", [UNITS[0]], endsAt="2031-06-15T00:00:00Z",
                      allowedOrgIds=["org-broker"]),
        f.reservation("res-few-1", [UNITS[1]], endsAt="2031-07-15T00:00:00Z",
                      allowedOrgIds=["org-lab", "org-broker"]),
        f.reservation("res-few-2", [UNITS[2]], endsAt="2031-08-15T00:00:00Z",
                      status="needs-review"),
    ])]))  # fmt: skip


def _in_thread(call: Callable[[], HttpResult]) -> HttpResult:
    """``call`` on a thread of its own, as Lambda runs a handler: from a shallow stack.
    moto's Query compares every item of the partition in Python, and at some depths of
    pytest's stack CPython 3.11 maps and unmaps a 16 KiB frame chunk for each comparison
    (strace: 900,000 mmap calls in two minutes), which made the 10,000 case 5x slower."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(call).result()


# Each query with what it lists among the few; the others match none of them.
FILTERED = [
    ({"role": "audience"}, ["res-few-0", "res-few-1"]),
    ({"role": "owner"}, []),
    ({"status": "needs-review"}, ["res-few-2"]),
    ({"status": "needs-review", "role": "audience"}, []),
]


@pytest.mark.parametrize("others", [0, 1_000, 10_000])
def test_a_filtered_page_reads_only_the_reservations_it_lists(
    aws, load_fleet, functions, sent_requests, others
):
    """A broker that manages ``others`` reservations asks by a role or a status that
    none of them has: the entries say so, so the page reads index entries only, and the
    reservations it lists (and their node) in one BatchGetItem; nothing when none match."""
    _few(load_fleet)
    FleetStream(aws, functions["fleet_indexer"]).run()
    _managed_only(aws, others)
    # The key cached: a query of an empty key range reads nothing else.
    warm = fleet_event(BROKER, {"endsBefore": "1999-01-01T00:00:00Z"})
    for query, few in FILTERED:
        key_cache.clear()  # a key is cached a minute from its lookup: looked up anew
        invoke(functions["list_fleet_reservations"], warm)
        sent_requests.clear()
        event = fleet_event(BROKER, {**query, "limit": "50"})
        result = _in_thread(lambda e=event: invoke(functions["list_fleet_reservations"], e))
        assert result.status == 200, query
        assert [r["id"] for r in result.body["items"]] == few
        assert "nextCursor" not in result.body
        assert sent_requests.keys_asked == ([len(few) + 1] if few else [])  # the node too
        assert set(sent_requests.sent) <= {("dynamodb", "Query"), ("dynamodb", "BatchGetItem")}
        # every entry of the org read once, in reads four times larger each (51, 204,
        # 816, 3,264, then up to 10,000 entries: a Query's 1 MB first); the index returns
        # only the few that may match
        assert sum(scanned for _, scanned in sent_requests.items_read) == others + 3
        assert sum(returned for returned, _ in sent_requests.items_read) == len(few)
        assert len(sent_requests.items_read) <= 4 + (others + 3) // 2500


def test_a_page_with_items_reads_at_most_a_page_that_the_fresh_read_rules_out(
    aws, load_fleet, functions, sent_requests
):
    """Entries the index has not caught up with (their reservations gone, say) after the
    page's first item: it reads at most a page's worth of them, then answers what it has
    with a cursor; the next page goes on from there."""
    _few(load_fleet)
    FleetStream(aws, functions["fleet_indexer"]).run()
    ghosts = [{
        "PK": "FLEET#org-broker#live", "SK": f"2031-06-20T00:00:00Z#node-gone#res-{i:03d}",
        "nodeId": "node-gone", "reservationId": f"res-{i:03d}", "liveness": "live",
        "status": "active", "startsAt": "2026-01-01T00:00:00Z",
        "endsAt": "2031-06-20T00:00:00Z", "review": False, "version": 1,
        "roles": ["audience"],
    } for i in range(30)]  # fmt: skip
    for start in range(0, len(ghosts), 25):
        batch = [{"PutRequest": {"Item": to_attributes(g)}} for g in ghosts[start : start + 25]]
        aws.batch_write_item(RequestItems={"ReservationsTable": batch})
    invoke(functions["list_fleet_reservations"],
           fleet_event(BROKER, {"endsBefore": "1999-01-01T00:00:00Z"}))  # fmt: skip
    sent_requests.clear()
    query = {"role": "audience", "limit": "5"}
    first = invoke(functions["list_fleet_reservations"], fleet_event(BROKER, query))
    assert [r["id"] for r in first.body["items"]] == ["res-few-0"]
    # res-few-0 and 4 ghosts, then one more ghost; each with its node
    assert sent_requests.keys_asked == [5 + 2, 1 + 1]
    cursor = first.body["nextCursor"]
    ids: list[str] = []
    while cursor:
        page = invoke(functions["list_fleet_reservations"],
                      fleet_event(BROKER, {**query, "cursor": cursor}))  # fmt: skip
        ids += [r["id"] for r in page.body["items"]]
        cursor = page.body.get("nextCursor")
    assert ids == ["res-few-1"]
