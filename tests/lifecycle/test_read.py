"""Get and list over the fakes: who sees what, the filter, pages and the signed cursor."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from reservations.kernel.caller import Caller
from reservations.kernel.cursors import Cursor, CursorScope, encode_cursor
from reservations.kernel.errors import InvalidRequest, NotFound
from reservations.lifecycle.read import (
    LIVE_STATUSES,
    ListQuery,
    get_reservation,
    list_reservations,
)
from reservations.nodes.models.partition import ReservationStatus
from tests.support.fakes import FakeTable
from tests.support.paging import bounded_pages
from tests.support.use_cases import NOW, reservation

pytestmark = pytest.mark.disable_socket

KEY = b"k" * 32
READ = frozenset({"reservation.read"})
OWNER = Caller("key-owner", "org-acme", READ)
OPERATOR = Caller("key-op", "org-op", READ, platform_operator=True)
BROKER = Caller("key-broker", "org-broker", READ)  # manages res-1 only
LAB = Caller("key-lab", "org-lab", READ)  # the audience of res-1 and res-3
STRANGER = Caller("key-x", "org-x", READ)
DAY = timedelta(days=1)


@pytest.fixture
def many(store: FakeTable) -> FakeTable:
    """node-a with res-1 (active) plus res-2 (pending, another audience), res-3 (expired),
    res-4 (cancelled) and res-5 (needs-review)."""
    store.seed(
        "node-a",
        reservation(
            "res-2", ReservationStatus.PENDING, allowed_org_ids=("org-other",),
            managing_org_ids=(), starts_at=NOW + DAY,
        ),
        reservation("res-3", ends_at=NOW - DAY, starts_at=NOW - 9 * DAY, managing_org_ids=()),
        reservation("res-4", ReservationStatus.CANCELLED, managing_org_ids=()),
        reservation("res-5", ReservationStatus.NEEDS_REVIEW, allowed_org_ids=("org-other",),
                    managing_org_ids=()),
    )  # fmt: skip
    return store


def page(store, caller=OWNER, node="node-a", **query):
    return list_reservations(caller, node, ListQuery(**query), store, KEY, NOW)


def ids(result) -> list[str]:
    return [r.id for r in result.items]


# --- get ----------------------------------------------------------------------------------


@pytest.mark.parametrize("caller", [OWNER, OPERATOR, BROKER, LAB])
def test_the_owner_operator_managers_and_audience_get_a_reservation(many, caller):
    view = get_reservation(caller, "node-a", "res-1", many, NOW)
    assert (view.id, view.status, view.released_unit_ids) == (
        "res-1",
        "active",
        sorted(view.released_unit_ids),
    )


def test_get_shows_the_effective_status(many):
    assert get_reservation(OWNER, "node-a", "res-3", many, NOW).status == "expired"
    assert get_reservation(OWNER, "node-a", "res-2", many, NOW + 2 * DAY).status == "active"


@pytest.mark.parametrize(
    ("caller", "node", "res"),
    [
        (STRANGER, "node-a", "res-1"),
        (LAB, "node-a", "res-2"),  # not its audience
        (BROKER, "node-a", "res-3"),  # manages another reservation only
        (OWNER, "node-a", "res-x"),
        (OWNER, "node-x", "res-1"),
        (replace(OWNER, permissions=frozenset({"reservation.write"})), "node-a", "res-1"),
    ],
)
def test_get_answers_the_same_404_for_unknown_and_invisible(many, caller, node, res):
    with pytest.raises(NotFound):
        get_reservation(caller, node, res, many, NOW)


def test_get_refuses_malformed_ids_and_missing_permissions_before_any_read(many):
    reads = many.reads
    for caller, node, res in ((OWNER, "node a", "res-1"), (OWNER, "node-a", "res/1"),
                              (Caller("k", "org-acme", frozenset()), "node-a", "res-1")):  # fmt: skip
        with pytest.raises(NotFound):
            get_reservation(caller, node, res, many, NOW)
    assert many.reads == reads


# --- list: who sees what ------------------------------------------------------------------


@pytest.mark.parametrize("caller", [OWNER, OPERATOR])
def test_the_owner_and_operator_list_every_reservation_sorted_by_id(many, caller):
    result = page(many, caller)
    assert ids(result) == ["res-1", "res-2", "res-3", "res-4", "res-5"]
    assert result.next_cursor is None
    assert [r.status for r in result.items] == ["active", "pending", "expired", "cancelled",
                                                "needs-review"]  # fmt: skip


def test_others_list_only_what_names_their_org(many):
    assert ids(page(many, LAB)) == ["res-1", "res-3", "res-4"]
    assert ids(page(many, BROKER)) == ["res-1"]


def test_an_org_that_sees_none_of_the_nodes_reservations_gets_404_not_an_empty_list(many):
    for caller, node in ((STRANGER, "node-a"), (OWNER, "node-x"), (OWNER, "node a")):
        with pytest.raises(NotFound):
            page(many, caller, node)
    with pytest.raises(NotFound):  # the filter matching nothing does not change that
        page(many, STRANGER, status="cancelled")


def test_the_owner_of_a_node_without_reservations_gets_an_empty_list(store):
    store.nodes["node-a"].reservations.clear()
    assert page(store).items == []


def test_a_filter_that_matches_nothing_is_an_empty_page_for_one_who_sees_some(many):
    assert page(many, BROKER, status="cancelled").items == []


# --- list: the query ------------------------------------------------------------------------


def test_status_filters_by_effective_status(many):
    assert ids(page(many, status="active")) == ["res-1"]
    assert ids(page(many, status="expired,needs-review")) == ["res-3", "res-5"]
    assert ids(page(many, status="pending, cancelled")) == ["res-2", "res-4"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"status": "live"}, "status"),
        ({"status": "active,"}, "status"),
        ({"status": " "}, "status"),
        ({"limit": "0"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"limit": "1e2"}, "limit"),
        ({"limit": "-1"}, "limit"),
        ({"limit": "0001"}, "limit"),
        ({"limit": "007"}, "limit"),  # decimal without a leading zero, as the spec's pattern
        ({"status": "active\t"}, "status"),  # entries are trimmed of spaces only
        ({"limit": "٣"}, "limit"),  # a digit, but not an ASCII one
        ({"cursor": "garbage"}, "cursor"),
    ],
)
def test_a_bad_query_is_a_400_naming_it_before_any_read(many, query, field):
    reads = many.reads
    with pytest.raises(InvalidRequest) as refused:
        page(many, **query)
    assert [d.field for d in refused.value.details] == [field]
    assert many.reads == reads


def test_a_query_part_given_empty_is_absent(many):
    whole = ids(page(many))
    assert ids(page(many, status="")) == whole
    assert ids(page(many, limit="", cursor="", status="")) == whole
    assert ids(page(many, limit="")) == whole


# --- list: pages and cursors ------------------------------------------------------------------


def _all_pages(store, caller=OWNER, **query) -> list[list[str]]:
    pages, cursor = [], None
    for _ in bounded_pages():
        result = page(store, caller, cursor=cursor, **query)
        pages.append(ids(result))
        if result.next_cursor is None:
            break
        cursor = result.next_cursor
    return pages


def test_pages_stop_at_limit_and_together_list_everything_once(many):
    assert _all_pages(many, limit="2") == [["res-1", "res-2"], ["res-3", "res-4"], ["res-5"]]
    assert _all_pages(many, LAB, limit="1") == [["res-1"], ["res-3"], ["res-4"]]
    assert _all_pages(many, limit="2", status="active,cancelled") == [["res-1", "res-4"]]


def test_each_page_is_one_read(many):
    reads = many.reads
    assert len(_all_pages(many, limit="2")) == 3
    assert many.reads == reads + 3


def test_a_query_that_stops_early_gives_a_cursor_after_what_it_read(many):
    many.page_size = 2  # the Query's 1 MB, in reservations
    assert _all_pages(many, limit="3") == [["res-1", "res-2"], ["res-3", "res-4"], ["res-5"]]
    assert _all_pages(many, LAB) == [["res-1"], ["res-3", "res-4"], []]
    many.page_size = 3  # after the last one read, not one in the middle
    assert _all_pages(many, LAB) == [["res-1", "res-3"], ["res-4"]]


def test_a_later_page_still_filters_by_visibility(many):
    first = page(many, LAB, limit="1")
    assert ids(page(many, LAB, limit="5", cursor=first.next_cursor)) == ["res-3", "res-4"]


def test_a_cursor_is_a_position_and_the_owner_that_lost_the_node_gets_the_404(many):
    cursor = page(many, OWNER, limit="1").next_cursor
    partition = many.nodes["node-a"]
    partition.node = replace(partition.node, owner_org_id="org-new")
    with pytest.raises(NotFound):
        page(many, OWNER, limit="1", cursor=cursor)
    # An old owner that some reservation names sees those only, on the same cursor.
    many.seed("node-a", reservation("res-6", allowed_org_ids=("org-acme",)))
    assert ids(page(many, OWNER, cursor=cursor)) == ["res-6"]


def test_an_org_that_becomes_the_owner_sees_everything_from_its_next_page(many):
    cursor = page(many, LAB, limit="1").next_cursor
    partition = many.nodes["node-a"]
    partition.node = replace(partition.node, owner_org_id="org-lab")
    assert ids(page(many, LAB, cursor=cursor)) == ["res-2", "res-3", "res-4", "res-5"]


def test_whether_an_org_may_list_is_decided_over_the_whole_node_not_the_first_read(many):
    many.page_size = 2  # the Query's 1 MB, in reservations: res-5 is not on the first read
    other = Caller("key-other", "org-other", READ)  # named by res-2 and res-5 only
    # never an empty page while there is a next one: the service reads on
    assert _all_pages(many, other) == [["res-2"], ["res-5"]]
    many.nodes["node-a"].reservations.pop("res-2")
    assert _all_pages(many, other) == [["res-5"]]


def _tampered(cursor: str) -> list[str]:
    payload, signature = cursor.split(".")
    flipped = ("A" if signature[0] != "A" else "B") + signature[1:]
    return [
        f"{payload}.{flipped}",
        f"{payload[:-2]}.{signature}",
        cursor + "x",
        cursor.replace(".", ""),
        "." + signature,
        "x" * 5000,
        "é.é",
    ]


def test_a_tampered_cursor_is_a_400(many):
    cursor = page(many, limit="1").next_cursor
    assert cursor is not None
    for bad in _tampered(cursor):
        with pytest.raises(InvalidRequest):
            page(many, limit="1", cursor=bad)


def test_a_cursor_signed_with_another_key_is_a_400(many):
    forged = encode_cursor(Cursor("res-1"), CursorScope("node-a", "", "org-x"), b"x" * 32)
    with pytest.raises(InvalidRequest):
        page(many, STRANGER, cursor=forged)


def test_a_cursor_cannot_be_replayed_on_another_node_filter_or_org(many):
    many.add(replace(many.nodes["node-a"].node, id="node-b"))
    cursor = page(many, OWNER, limit="1").next_cursor
    for caller, node, status in ((OWNER, "node-b", None), (OWNER, "node-a", "active"),
                                 (STRANGER, "node-a", None), (LAB, "node-a", None)):  # fmt: skip
        with pytest.raises(InvalidRequest):
            page(many, caller, node, cursor=cursor, status=status)
    # The same filter spelled otherwise is the same list.
    cursor = page(many, limit="1", status="cancelled,active").next_cursor
    assert ids(page(many, cursor=cursor, status="active, cancelled")) == ["res-4"]


@pytest.mark.parametrize(
    ("query", "message", "problem"),
    [
        ({"limit": "0"}, "limit must be an integer from 1 to 100", "must be an integer from 1 to 100"),
        ({"status": "active,bogus"},
         "status must be a comma-separated list of active, cancelled, expired, needs-review, "
         "pending", "unknown status 'bogus'"),
        ({"status": "activeX"},
         "status must be a comma-separated list of active, cancelled, expired, needs-review, "
         "pending", "unknown status 'activeX'"),
        ({"status": "x" * 50},
         "status must be a comma-separated list of active, cancelled, expired, needs-review, "
         "pending", f"unknown status {'x' * 40!r}"),
    ],
)  # fmt: skip
def test_a_bad_query_says_what_it_takes(many, query, message, problem):
    with pytest.raises(InvalidRequest) as refused:
        page(many, **query)
    assert refused.value.message == message
    assert [d.problem for d in refused.value.details] == [problem]


def test_listing_without_the_read_permission_is_the_404(many):
    writer = replace(OWNER, permissions=frozenset({"reservation.write"}))
    with pytest.raises(NotFound):
        page(many, writer)
    assert many.reads == 0


def test_a_cursor_is_scoped_to_the_statuses_comma_separated_in_order(many):
    scope = CursorScope("node-a", "active,cancelled", "org-acme")
    cursor = encode_cursor(Cursor("res-1"), scope, KEY)
    assert ids(page(many, cursor=cursor, status="cancelled,active")) == ["res-4"]


def _read_with(
    store: FakeTable, caller: Caller = OWNER, **query: str
) -> list[tuple[bool, int | None]]:
    """What the use case asks of the store: (history, limit) of each page read."""
    asked: list[tuple[bool, int | None]] = []
    read = store.reservation_page

    def recording(node_id: str, after: str | None, history: bool = False, limit: int | None = 100):
        asked.append((history, limit))
        return read(node_id, after, history, limit)

    store.reservation_page = recording  # type: ignore[method-assign]
    page(store, caller, **query)
    return asked


@pytest.mark.parametrize(
    ("query", "history"),
    [
        ({}, True),
        ({"status": "cancelled"}, True),
        ({"status": "active,expired"}, True),
        ({"status": ",".join(sorted(LIVE_STATUSES))}, False),
        ({"status": "active"}, False),
    ],
)
def test_history_is_read_unless_every_status_asked_is_a_live_one(many, query, history):
    # The operator reads a bounded window; any other org as much as one Query holds, so
    # that the one reservation naming it is found behind any number of others.
    assert _read_with(many, OPERATOR, limit="2", **query) == [(history, 2)]
    assert _read_with(many, OWNER, limit="2", **query) == [(history, None)]
