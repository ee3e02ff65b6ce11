"""GET /v1/usage through the real handlers over moto, every write at a clock the test sets:
a node registered with three units (one of 2 GPUs), a reservation made an hour later, a
unit released, a spot VM placed on it and ended. The day's figures to the millisecond, the
hours' rows, who sees which rows, paging, the watermark, and every bad query."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import boto3
import pytest

from devstack import fleet_documents as f
from devstack.api_events import (
    create_event,
    end_event,
    event_file,
    node_event,
    place_event,
    release_event,
    update_event,
    usage_event,
)
from devstack.fleets import NODE_QUEUE_PREFIX
from devstack.functions import FakeContext, invoke, load_function
from reservations.kernel.aws import clients, event_items
from reservations.kernel.cursors import Cursor, CursorScope, encode_cursor
from reservations.kernel.settings import cursor_signing_key
from reservations.usage.checkpoints import SETTLED, UsageCheckpoints, checkpoint_hour
from reservations.usage.read import USAGE_FEED
from reservations.usage.rules.facts import to_ms
from reservations.usage.rules.query import UsageQuery, parse
from reservations.usage.table import UsageTable
from reservations_tools.fleet.loader import local_dead_letter_arn
from tests.support.fleet_index import FleetStream
from tests.support.ports import swap_ports

pytestmark = pytest.mark.moto

H = 3_600_000  # an hour, in ms
DAY = 24 * H
T0 = datetime(2026, 12, 1, tzinfo=UTC)
U1, U2, U3 = "0000:04:00.0", "0000:05:00.0", "0000:06:00.0"
NODE = "node-u"
FUNCTIONS = ("put_node", "create_reservation", "release", "place_workload", "end_workload",
             "list_usage")  # fmt: skip
USAGE_KEYS = {
    "operator": ("vl_local_test_usage_operator", "org-platform"),
    "owner": ("vl_local_test_usage_owner", "org-acme"),
    "broker": ("vl_local_test_usage_broker", "org-broker"),
    "lab": ("vl_local_test_usage_lab", "org-lab"),
    "stranger": ("vl_local_test_usage_stranger", "org-stranger"),
}
KEYS = [
    *({"key": key, "orgId": org, "permissions": ["usage.read"]} for key, org in USAGE_KEYS.values()),
    {"key": "vl_local_test_writer", "orgId": "org-platform",
     "permissions": ["node.write", "reservation.write", "reservation.capacity",
                     "workload.place", "reservation.read"]},
    {"key": "vl_local_test_no_usage", "orgId": "org-acme", "permissions": ["reservation.read"]},
]  # fmt: skip
WRITER = "Bearer vl_local_test_writer"


def bearer(who: str) -> str:
    return f"Bearer {USAGE_KEYS[who][0]}"


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def at(self, ms: int) -> None:
        self.now = T0 + timedelta(milliseconds=ms)


@pytest.fixture
def functions(aws, load_fleet, monkeypatch) -> tuple[dict[str, ModuleType], Clock]:
    stream = FleetStream(aws)  # from the stream's start: the fleet index of every write
    monkeypatch.setenv("NODE_QUEUE_PREFIX", NODE_QUEUE_PREFIX)
    monkeypatch.setenv("NODE_DEAD_LETTER_QUEUE_ARN", local_dead_letter_arn(boto3.client("sqs")))
    clients.reset()
    load_fleet(f.fleet([], extra_keys=KEYS))
    loaded = {name: load_function(name) for name in FUNCTIONS}
    clock = Clock()
    for module in loaded.values():
        swap_ports(monkeypatch, module, clock=clock)
    # The feeds' positions by the same clock: each write recorded at its own moment.
    monkeypatch.setattr(event_items, "record_clock", clock)
    clock.index = stream.run  # type: ignore[attr-defined]
    return loaded, clock


def _ok(result: Any) -> Any:
    if result.status == 204:
        return None
    assert result.status in (200, 201), result.body
    return result.body


@pytest.fixture
def day(functions) -> tuple[dict[str, ModuleType], Clock]:
    """The node's first day: registered at 00:00, res-1 (U1, U2; managed by org-broker,
    audience org-lab) at 01:00, U1 released at 02:00, a spot VM on it from 03:00 to 04:00."""
    fns, clock = functions
    units = [f.unit(U1), f.unit(U2), f.unit(U3, sellableGpus=2)]
    body = {"ownerOrgId": "org-acme", "topologyGen": 1, "units": units}
    _ok(invoke(fns["put_node"], node_event(NODE, body, WRITER)))
    clock.at(1 * H)
    create = {"unitIds": [U1, U2], "allowedOrgIds": ["org-lab"], "managingOrgIds": ["org-broker"],
              "startsAt": clock.now.isoformat()}  # fmt: skip
    created = _ok(invoke(fns["create_reservation"], create_event(NODE, create, WRITER, "k-c")))
    assert created["id"]
    clock.at(2 * H)
    rid = created["id"]
    _ok(invoke(fns["release"], release_event(NODE, rid, {"unitIds": [U1]}, WRITER, "k-r")))
    clock.at(3 * H)
    vm = {"id": "vm-1", "kind": "vm", "tier": "spot", "orgId": "org-spot", "unitIds": [U1]}
    _ok(invoke(fns["place_workload"], place_event(NODE, vm, WRITER, "k-p")))
    clock.at(4 * H)
    _ok(invoke(fns["end_workload"], end_event(NODE, "vm-1", WRITER, "k-e")))
    clock.index()  # type: ignore[attr-defined]
    clock.reservation_id = rid  # type: ignore[attr-defined]
    return fns, clock


def usage(fns: dict[str, ModuleType], who: str, **query: str) -> Any:
    query.setdefault("from", "2026-12-01T00:00:00Z")
    query.setdefault("to", "2026-12-02T00:00:00Z")
    return invoke(fns["list_usage"], usage_event(who if " " in who else bearer(who), query))


def test_a_day_of_a_node_to_the_millisecond(day):
    fns, clock = day
    clock.at(DAY + 10_000)
    [row] = _ok(usage(fns, "owner"))["items"]
    assert row["unitMs"] == {
        "review": 0, "reclaiming": 0,
        "lent_used": 1 * H, "lent_idle": 21 * H,
        "reserved_used": 0, "reserved_idle": 24 * H,
        "open_used": 0, "open_idle": 26 * H,
    }  # fmt: skip
    assert sum(row["unitMs"].values()) == 3 * DAY  # three units, all day
    # The 2-GPU unit (U3, open all day) counts twice in GPU-ms; the others once.
    assert row["gpuMs"] == {**row["unitMs"], "open_idle": 26 * H + 24 * H}
    assert (row["id"], row["nodeId"], row["final"], row["revision"]) == (
        f"{NODE}/day/2026-12-01T00:00:00Z", NODE, True, 1)  # fmt: skip
    assert (row["start"], row["end"]) == ("2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z")
    assert row["asOf"] == "2026-12-02T00:00:05.000Z"  # now less the settle window


def test_a_node_is_its_reservations_plus_its_open_units(day):
    fns, clock = day
    clock.at(DAY + 10_000)
    [node] = _ok(usage(fns, "operator"))["items"]
    [held] = _ok(usage(fns, "operator", groupBy="reservation"))["items"]
    assert held["reservationId"] == clock.reservation_id  # type: ignore[attr-defined]
    assert set(held["unitMs"]) == {"review", "reclaiming", "lent_used", "lent_idle",
                                   "reserved_used", "reserved_idle"}  # fmt: skip
    assert held["unitMs"]["lent_used"] == 1 * H
    assert held["unitMs"]["lent_idle"] == 21 * H
    for figures in ("unitMs", "gpuMs"):
        opened = node[figures]["open_idle"] + node[figures]["open_used"]
        assert sum(node[figures].values()) == sum(held[figures].values()) + opened


def test_hourly_rows_put_each_change_at_its_events_moment(day):
    fns, clock = day
    clock.at(DAY + 10_000)
    rows = _ok(usage(fns, "owner", granularity="hour", limit="24"))["items"]
    assert [r["start"][11:13] for r in rows] == [f"{h:02d}" for h in range(24)]
    assert rows[0]["unitMs"]["open_idle"] == 3 * H
    assert rows[1]["unitMs"]["reserved_idle"] == 2 * H  # res-1 from 01:00 exactly
    assert rows[2]["unitMs"]["lent_idle"] == 1 * H  # U1 released at 02:00
    assert rows[3]["unitMs"]["lent_used"] == 1 * H  # the VM from 03:00 to 04:00
    assert rows[4]["unitMs"]["lent_used"] == 0
    assert rows[4]["unitMs"]["lent_idle"] == 1 * H


def test_a_row_counts_up_to_the_watermark_and_is_final_after_it(day):
    fns, clock = day
    clock.at(12 * H)
    [row] = _ok(usage(fns, "owner"))["items"]
    assert row["final"] is False
    assert sum(row["unitMs"].values()) == 3 * (12 * H - 5_000)
    assert row["asOf"] == "2026-12-01T11:59:55.000Z"
    # The hours after the watermark have no row yet.
    hours = _ok(usage(fns, "owner", granularity="hour", limit="100"))["items"]
    assert len(hours) == 12
    assert hours[-1]["final"] is False
    assert hours[-2]["final"] is True


def test_who_sees_which_rows(day):
    fns, clock = day
    clock.at(DAY + 10_000)
    by = {"groupBy": "reservation"}
    rid = clock.reservation_id  # type: ignore[attr-defined]
    assert [r["nodeId"] for r in _ok(usage(fns, "owner"))["items"]] == [NODE]
    for who in ("owner", "operator", "broker", "lab"):
        assert [r["reservationId"] for r in _ok(usage(fns, who, **by))["items"]] == [rid], who
    for who in ("broker", "lab", "stranger"):  # a node's row is its owner's (and operator's)
        assert _ok(usage(fns, who))["items"] == [], who
        assert _ok(usage(fns, who, nodeId=NODE))["items"] == [], who
    assert _ok(usage(fns, "stranger", **by))["items"] == []
    # A key that names what it may not see answers as one naming what does not exist.
    hidden = usage(fns, "stranger", nodeId=NODE, **by, reservationId=rid)
    unknown = usage(fns, "stranger", nodeId="node-nope", **by, reservationId="res-nope")
    assert (hidden.status, hidden.body) == (unknown.status, unknown.body) == (200, {"items": []})


def test_a_key_without_usage_read_gets_the_404(day):
    fns, _ = day
    result = usage(fns, "Bearer vl_local_test_no_usage")
    assert (result.status, result.body["code"]) == (404, "not_found")
    assert usage(fns, "Bearer vl_unknown").status == 401


def test_pages_follow_the_cursor_bound_to_the_org_and_the_query(day):
    fns, clock = day
    clock.at(DAY + 10_000)
    seen, cursor, pages = [], None, 0
    while True:
        extra = {"cursor": cursor} if cursor else {}
        page = _ok(usage(fns, "owner", granularity="hour", limit="10", **extra))
        seen += [r["id"] for r in page["items"]]
        pages += 1
        cursor = page.get("nextCursor")
        if cursor is None:
            break
        assert page["items"]
    assert (pages, len(seen), len(set(seen))) == (3, 24, 24)
    first = _ok(usage(fns, "owner", granularity="hour", limit="10"))["nextCursor"]
    for who, query in (("operator", {"granularity": "hour"}),
                       ("owner", {"granularity": "hour", "groupBy": "reservation"})):  # fmt: skip
        refused = usage(fns, who, limit="10", cursor=first, **query)
        assert (refused.status, refused.body["details"][0]["field"]) == (400, "cursor"), who


def test_pages_walk_nodes_whose_ids_extend_another_with_no_row_lost_or_twice(day):
    """ "-" and "." sort before "/": node-u-b's rows come after all of node-u's in the
    answer's order, though "node-u-b/..." sorts before "node-u/..." as text. Paging by
    node and by reservation, a page at a time, gives every row of one whole page once."""
    fns, clock = day
    body = {"ownerOrgId": "org-acme", "topologyGen": 1, "units": [f.unit(U1), f.unit(U2)]}
    for node_id in ("node-u-b", "node-u.c"):
        _ok(invoke(fns["put_node"], node_event(node_id, body, WRITER)))
        create = {"unitIds": [U1], "managingOrgIds": ["org-broker"], "allowedOrgIds": ["org-lab"],
                  "startsAt": clock.now.isoformat()}  # fmt: skip
        _ok(invoke(fns["create_reservation"], create_event(node_id, create, WRITER, node_id)))
    clock.index()  # type: ignore[attr-defined]
    clock.at(DAY + 10_000)
    for who, query in (("owner", {}), ("owner", {"groupBy": "reservation"}),
                       ("broker", {"groupBy": "reservation"})):  # fmt: skip
        whole = _ok(usage(fns, who, granularity="hour", limit="100", **query))["items"]
        seen, cursor = [], None
        while True:
            extra = {"cursor": cursor} if cursor else {}
            page = _ok(usage(fns, who, granularity="hour", limit="7", **query, **extra))
            seen += [r["id"] for r in page["items"]]
            if (cursor := page.get("nextCursor")) is None:
                break
        assert seen == [r["id"] for r in whole], (who, query)
        assert len({r["nodeId"] for r in whole}) == 3, (who, query)


def test_a_cursor_of_the_earlier_form_pages_on_after_the_row_it_names(day):
    """A cursor names a place: the next page starts just after it. One issued before
    cursors named the place just before the next row (naming the last row shown) still
    pages on from the row after it, with no row twice."""
    fns, clock = day
    clock.at(DAY + 10_000)
    whole = _ok(usage(fns, "owner", granularity="hour", limit="24"))["items"]
    filters = parse(UsageQuery(from_="2026-12-01T00:00:00Z", to="2026-12-02T00:00:00Z",
                               granularity="hour", limit="10"))  # fmt: skip
    scope = CursorScope("", filters.canonical(), "org-acme", USAGE_FEED)
    earlier = encode_cursor(Cursor(f"{NODE}//{to_ms(T0) + 9 * H:015d}"), scope,
                            cursor_signing_key())  # fmt: skip
    page = _ok(usage(fns, "owner", granularity="hour", limit="10", cursor=earlier))["items"]
    assert [r["id"] for r in page] == [r["id"] for r in whole[10:20]]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"from": ""}, "from"),
        ({"to": ""}, "to"),
        ({"from": "yesterday"}, "from"),
        ({"from": "2026-12-01T12:00:00Z"}, "from"),  # not a whole day
        ({"to": "2026-12-01T00:30:00Z", "granularity": "hour"}, "to"),  # not a whole hour
        ({"to": "2026-12-01T00:00:00Z"}, "to"),  # not after from
        ({"to": "2028-01-06T00:00:00Z"}, "to"),  # more than 400 days
        ({"to": "2027-01-02T00:00:00Z", "granularity": "hour"}, "to"),  # more than 31 days
        ({"granularity": "week"}, "granularity"),
        ({"groupBy": "org"}, "groupBy"),
        ({"reservationId": "res-1"}, "reservationId"),  # only with groupBy=reservation
        ({"nodeId": "bad id"}, "nodeId"),
        ({"nodeId": ",".join(f"n{i}" for i in range(51))}, "nodeId"),
        ({"limit": "0"}, "limit"),
        ({"cursor": "not-a-cursor"}, "cursor"),
    ],
)
def test_a_bad_query_is_a_400_naming_its_field(day, query, field):
    fns, _ = day
    result = usage(fns, "owner", **query)
    assert result.status == 400, result.body
    assert (result.body["code"], result.body["details"][0]["field"]) == ("invalid_request", field)


def test_the_longest_periods_are_accepted(day):
    fns, clock = day
    clock.at(DAY + 10_000)
    assert usage(fns, "owner", to="2028-01-05T00:00:00Z").status == 200  # 400 days
    assert usage(fns, "owner", to="2027-01-01T00:00:00Z", granularity="hour").status == 200


def test_a_node_loaded_from_a_fleet_file_is_counted_from_its_load(functions, load_fleet, aws):
    fns, clock = functions
    units = [f.unit(U1), f.unit(U2, sellableGpus=2)]
    node = f.node("node-f", units, [f.reservation("res-f", [U1], releasedUnitIds=[U1])],
                  [f.workload("vm-f", [U1])])  # fmt: skip
    load_fleet(f.fleet([node], extra_keys=KEYS))
    [record] = aws.query(
        TableName="ReservationsTable",
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": "USAGE#node-f"}},
    )["Items"]
    loaded = datetime.fromisoformat(record["SK"]["S"].removeprefix("LOADED#").rpartition("#")[0])
    clock.now = loaded + timedelta(hours=2)
    start = loaded.replace(hour=0, minute=0, second=0, microsecond=0)
    period = {"from": start.isoformat(), "to": (start + timedelta(days=2)).isoformat()}
    rows = _ok(usage(fns, "owner", nodeId="node-f", **period))["items"]
    counted = 2 * H - 5_000  # from the load to the watermark
    assert sum(sum(r["unitMs"].values()) for r in rows) == 2 * counted
    # The spot VM on the released unit is lent_used from the load; the 2-GPU unit is open.
    assert sum(r["unitMs"]["lent_used"] for r in rows) == counted
    assert sum(r["gpuMs"]["open_idle"] for r in rows) == 2 * counted


def test_a_named_nodes_page_reads_its_access_its_loads_and_its_feed(day, sent_requests):
    """The requests of a page by node for one named node, the key cached: one GetItem of
    the node's list access, one Query of its latest checkpoint before the period (one
    item), one of its load records, one of its events by time (a day of five events fits
    one page). By reservation, one BatchGetItem more: the reservations that governed a unit
    in the period, by id (live or ended), never the node's others."""
    fns, clock = day
    clock.at(DAY + 10_000)
    _ok(usage(fns, "owner", nodeId=NODE))  # the key, cached
    sent_requests.clear()
    [_] = _ok(usage(fns, "owner", nodeId=NODE))["items"]
    assert sent_requests.sent == [("dynamodb", "GetItem")] + [("dynamodb", "Query")] * 3
    sent_requests.clear()
    [_] = _ok(usage(fns, "owner", nodeId=NODE, groupBy="reservation"))["items"]
    assert sent_requests.sent == [("dynamodb", "GetItem")] + [("dynamodb", "Query")] * 3 + [
        ("dynamodb", "BatchGetItem")
    ]
    sent_requests.clear()
    assert _ok(usage(fns, "broker", nodeId=NODE))["items"] == []  # not its node's rows
    # Its key read (first use), the list access, and no fold.
    assert sent_requests.sent == [("dynamodb", "GetItem")] * 2


def test_an_owner_without_node_ids_gets_every_node_it_owns_reserved_or_not(day):
    """The fleet index lists a node under its owner (and the operator) from its
    registration on: a node with no reservation has rows too."""
    fns, clock = day
    body = {"ownerOrgId": "org-acme", "topologyGen": 1, "units": [f.unit(U1)]}
    _ok(invoke(fns["put_node"], node_event("node-v", body, WRITER)))
    clock.index()  # type: ignore[attr-defined]
    clock.at(DAY + 10_000)
    for who in ("owner", "operator"):
        rows = _ok(usage(fns, who))["items"]
        assert [r["nodeId"] for r in rows] == ["node-u", "node-v"], who
    assert sum(_ok(usage(fns, "owner", nodeId="node-v"))["items"][0]["unitMs"].values()) == (
        DAY - 4 * H
    )  # registered at 04:00 (the day's last write), counted to midnight
    assert _ok(usage(fns, "broker"))["items"] == []


def test_by_node_without_node_ids_a_page_reads_the_owned_nodes_from_its_cursor_on(
    day, sent_requests
):
    """Rows by node are the owner's (and the operator's): a page reads the owner's node
    list from its cursor's node on, and each node only until the page is full; never the
    fleet list of the reservations the org may see."""
    fns, clock = day
    body = {"ownerOrgId": "org-acme", "topologyGen": 1, "units": [f.unit(U1)]}
    for node_id in ("node-v", "node-w"):
        _ok(invoke(fns["put_node"], node_event(node_id, body, WRITER)))
    clock.index()  # type: ignore[attr-defined]
    clock.at(DAY + 10_000)
    _ok(usage(fns, "owner"))  # the key, cached
    sent_requests.clear()
    first = _ok(usage(fns, "owner", limit="1"))
    assert [r["nodeId"] for r in first["items"]] == [NODE]
    # The node list, then node-u and node-v (whose row shows the page has more): each its
    # list access, checkpoint, loads and events. node-w is not read.
    node = [("dynamodb", "GetItem")] + [("dynamodb", "Query")] * 3
    assert sent_requests.sent == [("dynamodb", "Query"), *node, *node]
    sent_requests.clear()
    second = _ok(usage(fns, "owner", limit="1", cursor=first["nextCursor"]))
    assert [r["nodeId"] for r in second["items"]] == ["node-v"]
    assert sent_requests.sent == [("dynamodb", "Query"), *node, *node]  # node-v, node-w
    third = _ok(usage(fns, "owner", limit="1", cursor=second["nextCursor"]))
    assert ([r["nodeId"] for r in third["items"]], third.get("nextCursor")) == (["node-w"], None)


def test_by_reservation_without_node_ids_the_nodes_come_from_the_index_entries_alone(
    day, sent_requests
):
    """The broker's page by reservation: its node list (it owns none), the live and ended
    ranges of its fleet index (the entries' node ids, no reservation read for them), then
    node-u as a named node's page reads it."""
    fns, clock = day
    clock.at(DAY + 10_000)
    _ok(usage(fns, "broker", groupBy="reservation"))  # the key, cached
    sent_requests.clear()
    [row] = _ok(usage(fns, "broker", groupBy="reservation"))["items"]
    assert row["reservationId"] == clock.reservation_id  # type: ignore[attr-defined]
    node = [("dynamodb", "GetItem"), *[("dynamodb", "Query")] * 3, ("dynamodb", "BatchGetItem")]
    assert sent_requests.sent == [("dynamodb", "Query")] * 3 + node


def test_without_node_ids_a_reservation_that_ended_before_the_period_is_not_read(
    day, sent_requests
):
    """The broker manages res-1 (open-ended) on node-u, and one on node-w that ended on
    day 1 at 06:00. Day 1 without nodeId reaches both nodes; day 2 reaches node-u alone:
    the fleet index is read from the period's start on (it is sorted by end), so node-w is
    neither listed nor folded. Its rows would be absent either way (none on day 2): the
    requests the page sends are what tell."""
    fns, clock = day
    clock.at(5 * H)
    body = {"ownerOrgId": "org-acme", "topologyGen": 1, "units": [f.unit(U1)]}
    _ok(invoke(fns["put_node"], node_event("node-w", body, WRITER)))
    create = {"unitIds": [U1], "managingOrgIds": ["org-broker"], "allowedOrgIds": ["org-lab"],
              "startsAt": "2026-12-01T05:00:00Z", "endsAt": "2026-12-01T06:00:00Z"}  # fmt: skip
    _ok(invoke(fns["create_reservation"], create_event("node-w", create, WRITER, "k-w")))
    clock.index()  # type: ignore[attr-defined]
    clock.at(2 * DAY + 10_000)
    by = {"groupBy": "reservation"}
    day_one = _ok(usage(fns, "broker", **by))["items"]
    assert [r["nodeId"] for r in day_one] == ["node-u", "node-w"]
    sent_requests.clear()
    assert [r["nodeId"] for r in _ok(usage(fns, "broker", **by))["items"]] == ["node-u", "node-w"]
    day_one_reads = sent_requests.by_service("dynamodb")
    sent_requests.clear()
    day_two = _ok(usage(fns, "broker", **by, **{"from": "2026-12-02T00:00:00Z",
                                                 "to": "2026-12-03T00:00:00Z"}))["items"]  # fmt: skip
    assert [r["nodeId"] for r in day_two] == ["node-u"]
    day_two_reads = sent_requests.by_service("dynamodb")
    # node-w's list access, its checkpoint, loads and events, and its reservation by id.
    assert day_one_reads - day_two_reads == {"GetItem": 1, "Query": 3, "BatchGetItem": 1}


def _keep_checkpoints(clock: Clock, hours: range) -> None:
    """The relay's usage outlet run at each hour's start plus its settling time: the
    node's checkpoint at each of those hours, each made from the one before."""
    outlet = UsageCheckpoints(UsageTable(), clock)
    for hour in hours:
        clock.at(hour * H + int(SETTLED.total_seconds() * 1000))
        assert checkpoint_hour(clock.now) == to_ms(T0) + hour * H
        outlet.keep(NODE, checkpoint_hour(clock.now))


def _hourly(fns: dict[str, ModuleType], who: str, start: int, **query: str) -> list[Any]:
    begin = (T0 + timedelta(milliseconds=start)).isoformat().replace("+00:00", "Z")
    page = usage(fns, who, nodeId=NODE, granularity="hour", to="2026-12-03T00:00:00Z",
                 limit="100", **{"from": begin}, **query)  # fmt: skip
    return list(_ok(page)["items"])


@pytest.mark.parametrize("group_by", ["node", "reservation"])
def test_rows_read_from_a_checkpoint_are_the_rows_read_from_the_first_event(day, group_by):
    """Checkpoints at every hour of two days (the relay's usage outlet): each hourly page
    that starts at one of them folds from it, and its rows are the same rows as those of
    the page that folds from the node's first event."""
    fns, clock = day
    clock.at(2 * DAY - H)
    whole = _hourly(fns, "owner", 0, groupBy=group_by)
    assert whole
    _keep_checkpoints(clock, range(1, 47))
    clock.at(2 * DAY - H)
    for hour in (1, 2, 3, 4, 5, 24, 46):
        rows = _hourly(fns, "owner", hour * H, groupBy=group_by)
        assert rows == [row for row in whole if row["start"] >= rows[0]["start"]], hour
        assert rows[0]["start"] == (T0 + timedelta(hours=hour)).isoformat().replace("+00:00", "Z")


def test_a_page_after_a_checkpoint_reads_none_of_the_nodes_past(day, sent_requests):
    """Day 2 read with the day's checkpoint kept: its events Query reads none of day 1's
    events; without it, the fold read all of them (five, by time)."""
    fns, clock = day
    clock.at(2 * DAY + 10_000)
    query = {"nodeId": NODE, "from": "2026-12-02T00:00:00Z", "to": "2026-12-03T00:00:00Z"}
    _ok(usage(fns, "owner", **query))  # the key, cached
    sent_requests.clear()
    [before] = _ok(usage(fns, "owner", **query))["items"]
    read_before = list(sent_requests.items_read)
    _keep_checkpoints(clock, range(24, 25))
    clock.at(2 * DAY + 10_000)
    sent_requests.clear()
    [after] = _ok(usage(fns, "owner", **query))["items"]
    # Its Queries: its checkpoint, no load record, no event.
    assert sent_requests.items_read == [(1, 1), (0, 0), (0, 0)]
    assert read_before == [(0, 0), (0, 0), (5, 5)]  # no checkpoint: day 1's events read
    assert after == before
    assert sum(after["unitMs"].values()) == 3 * DAY


def test_by_reservation_a_page_reads_only_the_reservations_that_governed_in_it(day, sent_requests):
    """Two more reservations of U3 on day 2 (01:00 to 02:00 for the lab's audience, from 02:00
    for another org's). Day 1 by reservation reads res-1 alone (by id: its live key and its
    history key); days 1 and 2 read the three; the lab sees the two that name it."""
    fns, clock = day
    rid = clock.reservation_id  # type: ignore[attr-defined]
    clock.at(DAY + H // 2)
    made = []
    for audience, starts, ends in (("org-lab", "01:00", "02:00"), ("org-other", "02:00", None)):
        body = {"unitIds": [U3], "allowedOrgIds": [audience],
                "startsAt": f"2026-12-02T{starts}:00Z",
                **({"endsAt": f"2026-12-02T{ends}:00Z"} if ends else {})}  # fmt: skip
        made.append(_ok(invoke(fns["create_reservation"],
                               create_event(NODE, body, WRITER, f"k-{audience}")))["id"])  # fmt: skip
    clock.at(2 * DAY + 10_000)
    by = {"groupBy": "reservation", "nodeId": NODE}
    _ok(usage(fns, "owner", **by))  # the key, cached
    sent_requests.clear()
    day_one = _ok(usage(fns, "owner", **by))["items"]
    assert [r["reservationId"] for r in day_one] == [rid]
    assert sent_requests.keys_asked == [2]
    sent_requests.clear()
    two_days = {"to": "2026-12-03T00:00:00Z", **by}
    both = _ok(usage(fns, "owner", **two_days))["items"]
    assert {r["reservationId"] for r in both} == {rid, *made}
    assert sent_requests.keys_asked == [6]
    lab = _ok(usage(fns, "lab", **two_days))["items"]
    assert {r["reservationId"] for r in lab} == {rid, made[0]}
    [lent] = [r for r in both if r["reservationId"] == made[0]]
    assert sum(lent["unitMs"].values()) == H  # 01:00 to 02:00 on day 2


def test_by_reservation_an_org_no_reservation_names_reads_no_fold(day, sent_requests):
    """The node's list access says which orgs its reservations name: for any other, a page
    by reservation reads that one item and nothing of the node's events."""
    fns, clock = day
    clock.at(DAY + 10_000)
    by = {"groupBy": "reservation", "nodeId": NODE}
    _ok(usage(fns, "stranger", **by))  # the key, cached
    sent_requests.clear()
    assert _ok(usage(fns, "stranger", **by))["items"] == []
    assert sent_requests.sent == [("dynamodb", "GetItem")]


def test_a_reservation_no_longer_kept_has_no_rows(day, monkeypatch):
    """A reservation that ended is read by id from the node's history and counted while it
    is kept; once its retention is over (HistoryRetentionDays after its end) its rows are
    gone, as it is from a GET, and the node's row still counts its units."""
    fns, clock = day
    clock.at(5 * H)
    body = {"unitIds": [U3], "allowedOrgIds": ["org-lab"],
            "startsAt": "2026-12-01T05:00:00Z", "endsAt": "2026-12-01T06:00:00Z"}  # fmt: skip
    ended = _ok(invoke(fns["create_reservation"], create_event(NODE, body, WRITER, "k-e2")))["id"]
    clock.at(DAY + 10_000)
    mover = load_function("history_mover")
    swap_ports(monkeypatch, mover, clock=clock)
    moved = mover.lambda_handler(event_file("history_mover/scheduled.json"), FakeContext())
    assert moved.get("moved") == 1, moved
    by = {"groupBy": "reservation", "nodeId": NODE}
    rid = clock.reservation_id  # type: ignore[attr-defined]
    kept = _ok(usage(fns, "lab", **by))["items"]
    assert {r["reservationId"] for r in kept} == {rid, ended}
    clock.at(5 * H + 402 * DAY)  # past the 400 days of its retention
    gone = _ok(usage(fns, "lab", **by))["items"]
    assert [r["reservationId"] for r in gone] == [rid]
    assert gone[0]["unitMs"] == next(r for r in kept if r["reservationId"] == rid)["unitMs"]
    [node] = _ok(usage(fns, "owner", nodeId=NODE))["items"]
    assert sum(node["unitMs"].values()) == 3 * DAY


def test_an_org_a_patch_adds_to_the_audience_sees_the_reservations_rows(day, monkeypatch):
    """Who sees what is decided when read: an org added to res-1's audience by a PATCH on
    day 2 sees res-1's rows of day 1 (the node's list access names it from the PATCH on)."""
    fns, clock = day
    rid = clock.reservation_id  # type: ignore[attr-defined]
    by = {"groupBy": "reservation", "nodeId": NODE}
    clock.at(DAY + H)
    assert _ok(usage(fns, "stranger", **by))["items"] == []
    patch = load_function("update_reservation")
    swap_ports(monkeypatch, patch, clock=clock)
    change = {"allowedOrgIds": ["org-lab", "org-stranger"]}
    update = invoke(patch, update_event(NODE, rid, change, WRITER, "k-u"))
    assert update.status == 200, update.body
    seen = _ok(usage(fns, "stranger", **by))["items"]
    assert [r["reservationId"] for r in seen] == [rid]
    assert seen == _ok(usage(fns, "lab", **by))["items"]


def test_a_write_answered_after_its_hour_was_final_restates_the_hours_it_changed(day, monkeypatch):
    """U2 released at 05:00 by a write that answered at 07:30 (its event recorded again
    then, ``rewrite_late``): the hours that were final by then, 05:00 and 06:00, are
    answered again with the lending counted at revision 2, by every reader; 07:00 was not
    final yet, and the day's row, final only tomorrow, stays at 1. Nothing is kept: the
    revision comes from the events."""
    fns, clock = day
    rid = clock.reservation_id  # type: ignore[attr-defined]
    hourly = {"granularity": "hour", "limit": "24", "nodeId": NODE}
    clock.at(7 * H + 20 * 60_000)  # before the write answers: 05:00 and 06:00 are final
    before = _ok(usage(fns, "owner", **hourly))["items"]
    assert [(r["start"][11:13], r["final"], r["revision"]) for r in before[5:]] == [
        ("05", True, 1), ("06", True, 1), ("07", False, 1)]  # fmt: skip
    clock.at(5 * H)
    answered = T0 + timedelta(hours=7.5)
    readings = iter([clock.now, answered])  # its position, then its answer
    monkeypatch.setattr(event_items, "record_clock", lambda: next(readings, answered))
    _ok(invoke(fns["release"], release_event(NODE, rid, {"unitIds": [U2]}, WRITER, "k-r2")))
    clock.at(9 * H)
    for who in ("owner", "operator"):
        after = _ok(usage(fns, who, **hourly))["items"]
        assert [(r["id"], r["revision"]) for r in after[:5]] == [
            (r["id"], 1) for r in before[:5]]  # fmt: skip
        assert [r["revision"] for r in after[5:9]] == [2, 2, 1, 1]
        for was, now in zip(before[5:7], after[5:7], strict=True):
            assert was["id"] == now["id"]
            assert now["unitMs"]["lent_idle"] == was["unitMs"]["lent_idle"] + H
    held = _ok(usage(fns, "broker", groupBy="reservation", **hourly))["items"]
    assert [(r["start"][11:13], r["revision"]) for r in held[3:]] == [
        ("04", 1), ("05", 2), ("06", 2), ("07", 1), ("08", 1)]  # fmt: skip
    clock.at(DAY + 10_000)
    [whole_day] = _ok(usage(fns, "owner", nodeId=NODE))["items"]
    assert (whole_day["final"], whole_day["revision"]) == (True, 1)
