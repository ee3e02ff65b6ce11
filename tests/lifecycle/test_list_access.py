"""Who may list a node's reservations, in-process over moto: decided on every page from the
node's list access item (a cursor is a position, never an authority), over the whole node
(not the first 1 MB a Query reads), and every writer keeps that item true."""

from __future__ import annotations

from datetime import timedelta
from types import ModuleType
from typing import Any

import boto3
import pytest

from devstack import fleet_documents as f
from devstack.api_events import cancel_event, create_event, get_event, list_event, node_event
from devstack.fleets import NODE_QUEUE_PREFIX
from devstack.functions import invoke, load_function
from reservations.kernel.aws import clients
from reservations.kernel.times import LAST_MOMENT, parse_time
from reservations.nodes.table.items import NAMED_UNTIL
from reservations_tools.fleet.loader import local_dead_letter_arn
from tests.support import state

pytestmark = pytest.mark.moto

U4, U5, U6 = "0000:04:00.0", "0000:05:00.0", "0000:06:00.0"
READ_WRITE = ["reservation.read", "reservation.write"]
KEYS = [
    {"key": "vl_local_test_nodes", "orgId": "org-platform", "permissions": ["node.write"]},
    {"key": "vl_local_test_acme", "orgId": "org-acme", "permissions": READ_WRITE},
    {"key": "vl_local_test_new_owner", "orgId": "org-new", "permissions": READ_WRITE},
]
NODES = "Bearer vl_local_test_nodes"
ACME = "Bearer vl_local_test_acme"
NEW_OWNER = "Bearer vl_local_test_new_owner"
LAB = "Bearer vl_local_test_lab"
BROKER = "Bearer vl_local_test_broker"
STRANGER = "Bearer vl_local_test_stranger"


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    names = ("list_reservations", "get_reservation", "create_reservation", "put_node", "cancel")
    return {name: load_function(name) for name in names}


@pytest.fixture
def node_env(aws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the template gives PutNodeFunction: the queue prefix and the dead-letter ARN."""
    monkeypatch.setenv("NODE_QUEUE_PREFIX", NODE_QUEUE_PREFIX)
    monkeypatch.setenv("NODE_DEAD_LETTER_QUEUE_ARN", local_dead_letter_arn(boto3.client("sqs")))
    clients.reset()


def listed(functions, key: str, node: str = "node-a", **query: str) -> Any:
    return invoke(functions["list_reservations"], list_event(node, key, query))


def every_page(functions, key: str) -> list[list[str]]:
    pages, cursor = [], None
    while True:
        result = listed(functions, key, **({"cursor": cursor} if cursor else {}))
        assert result.status == 200, result.body
        pages.append([r["id"] for r in result.body["items"]])
        cursor = result.body.get("nextCursor")
        if cursor is None:
            return pages


def put_node(functions, owner: str, node: str = "node-a") -> Any:
    body = {"ownerOrgId": owner, "topologyGen": 1, "units": [f.unit(u) for u in (U4, U5, U6)]}
    return invoke(functions["put_node"], node_event(node, body, NODES))


def create(functions, key: str, units: list[str], allowed: list[str], **body: Any) -> Any:
    document = {"unitIds": units, "allowedOrgIds": allowed, **body}
    return invoke(functions["create_reservation"], create_event("node-a", document, key))


def access_agrees(aws: Any, node_id: str = "node-a") -> dict[str, Any]:
    """The node's list access item says what its partition says: the node's owner, exactly
    the orgs its reservations name (in its partition and its history: both are listed), and
    the node item's unit generations. Returns the item."""
    partition = state.partition(aws, node_id)
    node = next(i for i in partition if i["SK"] == "#NODE")
    until: dict[str, int] = {}
    for item in [*partition, *state.history(aws, node_id)]:
        if item["SK"].startswith("RES#"):
            end = named_until_epoch(item)
            for org in (*item["allowedOrgIds"], *item["managingOrgIds"]):
                until[org] = max(end, until.get(org, end))
    access = state.item(aws, node_id, "~ACCESS")
    assert access is not None
    assert access["ownerOrgId"] == node["ownerOrgId"]
    assert named(access) == until
    assert access.get("unitsChangedAtGen") == node.get("unitsChangedAtGen")
    return access


def named_until_epoch(item: dict[str, Any]) -> int:
    """Until when a reservation item names its orgs: its history item's retention end; a
    live one, its end plus the retention (400 days here), an open-ended one year 9999."""
    if "expiresAtEpoch" in item:
        return int(item["expiresAtEpoch"])
    if item.get("endsAt") is None:
        return int(LAST_MOMENT.timestamp())
    return int((parse_time(item["endsAt"]) + timedelta(days=400)).timestamp())


def named(access: dict[str, Any]) -> dict[str, int]:
    """The orgs the list access item names, each with until when (epoch seconds)."""
    return {
        name.removeprefix(NAMED_UNTIL): int(value)
        for name, value in access.items()
        if name.startswith(NAMED_UNTIL)
    }


# --- a cursor is a position ------------------------------------------------------------------


def test_an_owner_that_lost_the_node_gets_the_404_with_its_old_cursor(
    functions, load_fleet, node_env, aws
):
    reservations = [f.reservation(f"res-{n}", [U4], status="cancelled") for n in range(3)]
    load_fleet(f.fleet([f.node("node-a", [f.unit(u) for u in (U4, U5, U6)], reservations)],
                       extra_keys=KEYS))  # fmt: skip
    first = listed(functions, ACME, limit="1")
    assert first.status == 200
    cursor = first.body["nextCursor"]
    assert put_node(functions, "org-new").status == 200
    made = create(functions, NEW_OWNER, [U5], ["org-newcustomer"])
    assert made.status == 201
    stranger = listed(functions, STRANGER)
    for old_owner in (listed(functions, ACME, limit="1", cursor=cursor), listed(functions, ACME)):
        assert (old_owner.status, old_owner.body_text) == (404, stranger.body_text)
    # Sorted by id: the made id is random, and may sort before res-1.
    assert every_page(functions, NEW_OWNER) == [
        sorted(["res-0", "res-1", "res-2", made.body["id"]])
    ]
    access_agrees(aws)


def test_an_old_owner_named_by_a_reservation_sees_only_that_one_on_its_old_cursor(
    functions, load_fleet, node_env
):
    reservations = [
        f.reservation("res-0", [U4], status="cancelled"),
        f.reservation("res-1", [U4], status="cancelled", allowedOrgIds=["org-acme"]),
        f.reservation("res-2", [U4], status="cancelled"),
    ]
    load_fleet(f.fleet([f.node("node-a", [f.unit(u) for u in (U4, U5, U6)], reservations)],
                       extra_keys=KEYS))  # fmt: skip
    cursor = listed(functions, ACME, limit="1").body["nextCursor"]
    assert put_node(functions, "org-new").status == 200
    page = listed(functions, ACME, cursor=cursor)
    assert page.status == 200
    assert [r["id"] for r in page.body["items"]] == ["res-1"]


# --- decided over the whole node ----------------------------------------------------------------


def _heavy(number: int) -> dict[str, Any]:
    """A cancelled reservation of about 7 KB: 50 long org ids and a long reason."""
    audience = [f"org-{n:02d}-" + "a" * 116 for n in range(50)]
    return f.reservation(f"a-{number:03d}", [U4], status="cancelled", allowedOrgIds=audience,
                         managingOrgIds=[], reason="r" * 1000)  # fmt: skip


@pytest.fixture
def heavy_node(functions, load_fleet) -> str:
    """200 cancelled reservations (more than one Query's 1 MB), then one for org-lab made
    through the API, whose id sorts after them all."""
    units = [f.unit(u) for u in (U4, U5, U6)]
    load_fleet(f.fleet([f.node("node-a", units, [_heavy(n) for n in range(200)])],
                       extra_keys=KEYS))  # fmt: skip
    made = create(functions, ACME, [U5], ["org-lab"], managingOrgIds=["org-broker"])
    assert made.status == 201
    return str(made.body["id"])


def test_an_org_named_past_the_first_megabyte_lists_its_reservation(functions, heavy_node, aws):
    for key in (LAB, BROKER):
        pages = every_page(functions, key)
        assert [i for page in pages for i in page] == [heavy_node]
        assert pages[0] == [heavy_node]  # the first read had none of it: the page read on
    get = invoke(functions["get_reservation"], get_event("node-a", heavy_node, LAB))
    assert get.status == 200
    assert listed(functions, STRANGER).status == 404
    access_agrees(aws)


def test_a_page_whose_query_stops_before_the_access_item_reads_it_with_one_get_more(
    functions, heavy_node, sent_requests
):
    listed(functions, LAB)  # the key cached
    sent_requests.clear()
    first = listed(functions, LAB)
    # The first Query stops at 1 MB before the access item (read on its own) and holds
    # nothing the lab may see: the page reads on, to the access item, rather than answer
    # an empty page with a nextCursor.
    assert sent_requests.sent == [("dynamodb", "Query"), ("dynamodb", "GetItem"),
                                  ("dynamodb", "Query")]  # fmt: skip
    assert first.status == 200
    assert first.body["items"]


# --- every writer keeps the access item true ------------------------------------------------


def test_the_loader_writes_the_owner_and_exactly_the_named_orgs(load_fleet, aws):
    reservations = [
        f.reservation("res-1", [U4], allowedOrgIds=["org-lab", "org-x"], managingOrgIds=["org-m"]),
        f.reservation("res-2", [U5], status="cancelled", allowedOrgIds=["org-y"],
                      managingOrgIds=[]),
    ]  # fmt: skip
    units = [f.unit(u) for u in (U4, U5, U6)]
    load_fleet(f.fleet([f.node("node-a", units, reservations)]))
    assert set(named(access_agrees(aws))) == {"org-lab", "org-x", "org-m", "org-y"}
    # Loaded again without them: the partition is replaced, and so are the orgs.
    load_fleet(f.fleet([f.node("node-a", units, reservations[1:], owner="org-other")]))
    access = access_agrees(aws)
    assert (access["ownerOrgId"], set(named(access))) == ("org-other", {"org-y"})
    load_fleet(f.fleet([f.node("node-a", units)]))
    assert named(access_agrees(aws)) == {}


def test_create_adds_the_orgs_it_names_and_a_refused_one_adds_none(functions, load_fleet, aws):
    load_fleet(f.fleet([f.node("node-a", [f.unit(u) for u in (U4, U5, U6)])], extra_keys=KEYS))
    made = create(functions, ACME, [U4], ["org-lab", "org-x"], managingOrgIds=["org-m"])
    assert made.status == 201
    assert set(named(access_agrees(aws))) == {"org-lab", "org-x", "org-m"}
    assert create(functions, ACME, [U5], ["org-lab"], managingOrgIds=["org-m"]).status == 201
    assert create(functions, ACME, [U4], ["org-refused"]).status == 409
    assert set(named(access_agrees(aws))) == {"org-lab", "org-x", "org-m"}
    cancelled = invoke(functions["cancel"], cancel_event("node-a", made.body["id"], {}, ACME))
    assert cancelled.status == 200  # a cancelled reservation is still listed: its orgs stay
    assert set(named(access_agrees(aws))) == {"org-lab", "org-x", "org-m"}


def test_put_node_registers_the_owner_and_moves_it_keeping_the_named_orgs(
    functions, load_fleet, node_env, aws
):
    load_fleet(f.fleet([], extra_keys=KEYS))
    assert put_node(functions, "org-acme").status == 201
    assert access_agrees(aws) == {"PK": "NODE#node-a", "SK": "~ACCESS", "ownerOrgId": "org-acme",
                                  "listPK": "NODE#node-a",
                                  "unitsChangedAtGen": {U4: 0, U5: 0, U6: 0},
                                  "version": 1}  # fmt: skip
    assert create(functions, ACME, [U4], ["org-lab"]).status == 201
    assert put_node(functions, "org-new").status == 200
    access = access_agrees(aws)
    assert (access["ownerOrgId"], set(named(access))) == ("org-new", {"org-lab"})
    assert listed(functions, ACME).status == 404
    assert listed(functions, NEW_OWNER).status == 200
