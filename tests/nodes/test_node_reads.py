"""The node and workload reads over a small in-memory reader: the 400s naming ``limit`` and
``state``, the state filter, a cursor bound to its node, filter, org and list, the one 404,
and a node item that does not name its units read with their unit items."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from reservations.kernel.caller import Caller
from reservations.kernel.cursors import Cursor, CursorScope, encode_cursor
from reservations.kernel.errors import InvalidRequest, NotFound
from reservations.nodes.models.partition import (
    ListAccess,
    Node,
    Termination,
    Workload,
    WorkloadState,
)
from reservations.nodes.models.reads import WorkloadsRead
from reservations.nodes.read import (
    WORKLOAD_FEED,
    WorkloadQuery,
    get_node,
    list_workloads,
)
from tests.support.use_cases import BOTH, NOW, OPERATOR, OWNER, STRANGER, workload

pytestmark = pytest.mark.disable_socket

KEY = b"k" * 32
TERMINATING = WorkloadState.TERMINATING
SPOT = Caller("key-spot", "org-spot", BOTH, key_hash="hash-spot")


@dataclass
class Reader:
    """node-a, owned by org-acme, with its workloads; any other node is unknown."""

    nodes: dict[str, Node] = field(default_factory=dict)
    units: dict[str, list[str]] = field(default_factory=dict)
    live: list[Workload] = field(default_factory=list)

    def node(self, node_id: str) -> Node | None:
        return self.nodes.get(node_id)

    def unit_ids(self, node_id: str) -> list[str]:
        return self.units[node_id]

    def workload(self, node_id: str, workload_id: str) -> tuple[Node | None, Workload | None]:
        found = next((w for w in self.live if w.id == workload_id), None)
        return self.nodes.get(node_id), found

    def workloads(self, node_id: str) -> WorkloadsRead:
        node = self.nodes.get(node_id)
        access = ListAccess(node.owner_org_id) if node else None
        return WorkloadsRead(access=access, workloads=tuple(self.live) if node else ())


def reader(*live: Workload) -> Reader:
    return Reader(nodes={"node-a": Node("node-a", "org-acme", topology_gen=3)}, live=list(live))


FOUR = (
    workload("1-first", ("0000:04:00.0",)),  # sorts before any capital or lower-case id
    workload("vm-b", ("0000:05:00.0",), state=TERMINATING, termination=Termination(id="t-1")),
    workload("vm-c", ("0000:06:00.0",)),
    workload("vm-d", ("0000:07:00.0",), state=TERMINATING, termination=Termination(id="t-2")),
)


def ids(caller: Caller, query: WorkloadQuery, node_id: str = "node-a") -> list[str]:
    page = list_workloads(caller, node_id, query, reader(*FOUR), KEY)
    return [item.id for item in page.items]


def refusal(query: WorkloadQuery) -> tuple[str, list[tuple[str, str]]]:
    with pytest.raises(InvalidRequest) as refused:
        list_workloads(OWNER, "node-a", query, reader(*FOUR), KEY)
    return refused.value.message, [(d.field, d.problem) for d in refused.value.details]


def test_the_first_page_starts_at_the_first_id() -> None:
    assert ids(OWNER, WorkloadQuery()) == ["1-first", "vm-b", "vm-c", "vm-d"]


@pytest.mark.parametrize(
    ("state", "shown"),
    [
        ("running", ["1-first", "vm-c"]),
        ("terminating", ["vm-b", "vm-d"]),
        ("running,terminating", ["1-first", "vm-b", "vm-c", "vm-d"]),
        ("terminating, running ", ["1-first", "vm-b", "vm-c", "vm-d"]),
    ],
)
def test_the_state_filter_keeps_the_workloads_in_those_states(state: str, shown: list[str]) -> None:
    assert ids(OWNER, WorkloadQuery(state=state)) == shown


@pytest.mark.parametrize(
    ("state", "named"),
    [
        ("stopped", "'stopped'"),
        ("running,\tterminating", "'\\tterminating'"),  # only spaces are trimmed
        ("Xrunning", "'Xrunning'"),
        ("running,", "''"),
        ("s" * 60, repr("s" * 40)),  # the unknown state is cut at 40 characters
    ],
)
def test_an_unknown_state_is_400_naming_state_and_the_first_unknown(state: str, named: str) -> None:
    assert refusal(WorkloadQuery(state=state)) == (
        "state must be a comma-separated list of running, terminating, waiting",
        [("state", f"unknown state {named}")],
    )


@pytest.mark.parametrize("limit", ["0", "101", "-1", "ten", "1.5", " 5", "05"])
def test_a_limit_outside_1_to_100_is_400_naming_limit(limit: str) -> None:
    assert refusal(WorkloadQuery(limit=limit)) == (
        "limit must be an integer from 1 to 100",
        [("limit", "must be an integer from 1 to 100")],
    )


def test_a_page_gives_a_cursor_bound_to_its_node_filter_org_and_list() -> None:
    page = list_workloads(
        OWNER, "node-a", WorkloadQuery(limit="1", state="running"), reader(*FOUR), KEY
    )
    assert [item.id for item in page.items] == ["1-first"]
    scope = CursorScope("node-a", "running", "org-acme", WORKLOAD_FEED)
    assert page.next_cursor == encode_cursor(Cursor("1-first"), scope, KEY)
    following = WorkloadQuery(limit="1", state="running", cursor=page.next_cursor)
    assert ids(OWNER, following) == ["vm-c"]


def test_a_cursor_binds_the_filter_as_its_sorted_comma_joined_states() -> None:
    query = WorkloadQuery(limit="2", state="terminating,running")
    page = list_workloads(OWNER, "node-a", query, reader(*FOUR), KEY)
    scope = CursorScope("node-a", "running,terminating", "org-acme", WORKLOAD_FEED)
    assert page.next_cursor == encode_cursor(Cursor("vm-b"), scope, KEY)
    assert ids(OWNER, WorkloadQuery(state="running,terminating", cursor=page.next_cursor)) == [
        "vm-c",
        "vm-d",
    ]


def test_the_last_page_has_no_cursor() -> None:
    page = list_workloads(OWNER, "node-a", WorkloadQuery(limit="4"), reader(*FOUR), KEY)
    assert len(page.items) == 4
    assert page.next_cursor is None


@pytest.mark.parametrize(
    "scope",
    [
        CursorScope("node-b", "", "org-acme", WORKLOAD_FEED),  # another node
        CursorScope("node-a", "running", "org-acme", WORKLOAD_FEED),  # another filter
        CursorScope("node-a", "", "org-spot", WORKLOAD_FEED),  # another org
        CursorScope("node-a", "", "org-acme", "events"),  # another feed
        CursorScope("node-a", "", "org-acme"),  # the reservation list
    ],
)
def test_a_cursor_of_another_scope_is_400_naming_cursor(scope: CursorScope) -> None:
    cursor = encode_cursor(Cursor("1-first"), scope, KEY)
    assert refusal(WorkloadQuery(cursor=cursor)) == (
        "cursor is not valid for this list",
        [("cursor", "is not a cursor this list gave out")],
    )


def test_a_cursor_of_this_scope_reads_on_after_its_id() -> None:
    cursor = encode_cursor(
        Cursor("vm-b"), CursorScope("node-a", "", "org-acme", WORKLOAD_FEED), KEY
    )
    assert ids(OWNER, WorkloadQuery(cursor=cursor)) == ["vm-c", "vm-d"]


def test_a_workloads_org_sees_its_own_workloads_only() -> None:
    mine = replace(workload("vm-mine", ("0000:08:00.0",)), org_id="org-lab")
    lab = Caller("key-lab", "org-lab", BOTH, key_hash="hash-lab")
    page = list_workloads(lab, "node-a", WorkloadQuery(), reader(*FOUR, mine), KEY)
    assert [item.id for item in page.items] == ["vm-mine"]


@pytest.mark.parametrize(
    ("caller", "node_id"),
    [
        (Caller("key-acme", "org-acme", frozenset(), key_hash="h"), "node-a"),  # no read
        (Caller("key-op", "org-op", frozenset(), platform_operator=True), "node-a"),
        (OWNER, "node-b"),  # unknown node
        (OWNER, "node a!"),  # malformed id
        (STRANGER, "node-a"),  # sees no workload of it
    ],
)
def test_who_may_see_no_workload_hears_404(caller: Caller, node_id: str) -> None:
    with pytest.raises(NotFound):
        list_workloads(caller, node_id, WorkloadQuery(), reader(*FOUR), KEY)


def test_a_node_with_no_workloads_is_404_even_to_its_owner() -> None:
    with pytest.raises(NotFound):
        list_workloads(OWNER, "node-a", WorkloadQuery(), reader(), KEY)


def test_a_node_item_naming_its_units_is_answered_with_them() -> None:
    store = reader()
    store.nodes["node-a"] = Node("node-a", "org-acme", 3, unit_changed_at={"u-2": 0, "u-1": 3})
    view = get_node(OPERATOR, "node-a", store, NOW)
    assert (view.id, view.owner_org_id, view.topology_gen) == ("node-a", "org-acme", 3)
    assert view.unit_ids == ["u-1", "u-2"]


def test_a_node_item_that_does_not_name_its_units_has_them_read() -> None:
    store = reader()
    store.units["node-a"] = ["u-9", "u-3"]
    assert get_node(OWNER, "node-a", store, NOW).unit_ids == ["u-3", "u-9"]


@pytest.mark.parametrize(
    ("caller", "node_id"),
    [
        (Caller("key-acme", "org-acme", frozenset(), key_hash="h"), "node-a"),
        (STRANGER, "node-a"),
        (SPOT, "node-a"),
        (OWNER, "node-b"),
        (OWNER, "node a!"),
    ],
)
def test_a_node_is_404_to_all_but_the_operator_and_its_owner(caller: Caller, node_id: str) -> None:
    with pytest.raises(NotFound):
        get_node(caller, node_id, reader(), NOW)
