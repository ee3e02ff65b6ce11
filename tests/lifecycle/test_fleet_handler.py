"""GET /v1/reservations through the real handler over moto, its index written by the real
fleet indexer from the table's stream (as the template's mapping hands it over): who sees
what, the order, the filters, paging, freshness, and the errors."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import boto3
import pytest

from devstack import fleet_documents as f
from devstack.api_events import cancel_event, event_file, fleet_event, node_event
from devstack.functions import FakeContext, invoke, load_function
from tests.support.fleet_index import FleetStream

pytestmark = pytest.mark.moto

KEYS = {role: f"Bearer {key}" for role, (key, _org) in f.KEYS.items()}
UNITS = [f"0000:{i:02x}:00.0" for i in range(1, 9)]
WRITER = {"key": "vl_local_test_writer", "orgId": "org-acme",
          "permissions": ["reservation.read", "reservation.write"]}  # fmt: skip
NO_READ = {"key": "vl_local_test_noread", "orgId": "org-broker",
           "permissions": ["reservation.capacity"]}  # fmt: skip
NODE_WRITER = {"key": "vl_local_test_node_writer", "orgId": "org-platform",
               "permissions": ["node.write"]}  # fmt: skip


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    names = ("list_fleet_reservations", "fleet_indexer", "cancel", "put_node")
    return {name: load_function(name) for name in names}


def _res(res_id: str, unit: str, ends: float | None, **overrides: Any) -> dict[str, Any]:
    return f.reservation(res_id, [unit], endsAt=f.days(ends) if ends is not None else None,
                         **overrides)  # fmt: skip


@pytest.fixture
def fleet(aws, load_fleet, functions) -> FleetStream:
    """Two nodes of org-acme and one of org-other: org-broker manages some, org-lab is the
    audience of others; one cancelled (history)."""
    node_a = f.node("node-a", [f.unit(u) for u in UNITS], [
        _res("res-a1", UNITS[0], 30),
        _res("res-a2", UNITS[1], 5, managingOrgIds=[], allowedOrgIds=["org-lab"]),
        _res("res-a3", UNITS[2], None, managingOrgIds=["org-broker"], allowedOrgIds=["org-x"]),
        _res("res-a4", UNITS[3], 10, status="cancelled"),
    ])  # fmt: skip
    node_b = f.node("node-b", [f.unit(u) for u in UNITS], [
        _res("res-b1", UNITS[0], 5, managingOrgIds=["org-broker"], allowedOrgIds=["org-y"]),
    ])  # fmt: skip
    node_c = f.node("node-c", [f.unit(u, gpuModelId="nvidia-a100") for u in UNITS], [
        _res("res-c1", UNITS[0], 20, managingOrgIds=[], allowedOrgIds=["org-lab"]),
    ], owner="org-other")  # fmt: skip
    load_fleet(f.fleet([node_a, node_b, node_c], extra_keys=[WRITER, NO_READ, NODE_WRITER]))
    stream = FleetStream(aws, functions["fleet_indexer"])
    stream.run()
    return stream


def _list(functions, who: str, query: dict[str, str] | None = None) -> Any:
    key = KEYS.get(who, who)
    return invoke(functions["list_fleet_reservations"], fleet_event(key, query))


def _ids(result: Any) -> list[str]:
    assert result.status == 200, result.body
    return [item["id"] for item in result.body["items"]]


def test_each_org_sees_exactly_its_own_by_end_then_node_then_id(fleet, functions):
    # ends: a2 +5d and b1 +5d (node-a before node-b), c1 +20d, a1 +30d, a3 open-ended
    assert _ids(_list(functions, "operator")) == ["res-a2", "res-b1", "res-c1", "res-a1", "res-a3"]
    assert _ids(_list(functions, "owner")) == ["res-a2", "res-b1", "res-a1", "res-a3"]
    assert _ids(_list(functions, "broker")) == ["res-b1", "res-a1", "res-a3"]
    assert _ids(_list(functions, "lab")) == ["res-a2", "res-c1", "res-a1"]
    assert _ids(_list(functions, "stranger")) == []  # never a 404 for an empty result


def test_roles_filter_and_the_operator_with_a_role_is_its_own_org(fleet, functions):
    assert _ids(_list(functions, "broker", {"role": "managing"})) == ["res-b1", "res-a1", "res-a3"]
    assert _ids(_list(functions, "lab", {"role": "managing"})) == []
    assert _ids(_list(functions, "lab", {"role": "audience,owner"})) == [
        "res-a2", "res-c1", "res-a1"]  # fmt: skip
    assert _ids(_list(functions, "owner", {"role": "owner"})) == [
        "res-a2", "res-b1", "res-a1", "res-a3"]  # fmt: skip
    assert _ids(_list(functions, "operator", {"role": "owner,managing,audience"})) == []


def test_status_filters_read_the_history_and_the_live_index(fleet, functions):
    assert _ids(_list(functions, "owner", {"status": "cancelled"})) == ["res-a4"]
    assert _ids(_list(functions, "owner", {"status": "cancelled,active"})) == [
        "res-a2", "res-b1", "res-a4", "res-a1", "res-a3"]  # fmt: skip
    assert _ids(_list(functions, "owner", {"status": "expired"})) == []
    assert _ids(_list(functions, "lab", {"status": "cancelled"})) == ["res-a4"]
    assert _ids(_list(functions, "stranger", {"status": "cancelled"})) == []


def test_a_live_reservation_whose_end_passed_is_listed_as_expired(aws, load_fleet, functions):
    node = f.node("node-a", [f.unit(u) for u in UNITS], [
        _res("res-old", UNITS[0], -1), _res("res-new", UNITS[1], 3)])  # fmt: skip
    load_fleet(f.fleet([node]))
    FleetStream(aws, functions["fleet_indexer"]).run()
    assert _ids(_list(functions, "broker")) == ["res-new"]
    expired = _list(functions, "broker", {"status": "expired"})
    assert _ids(expired) == ["res-old"]
    assert expired.body["items"][0]["status"] == "expired"
    assert _ids(_list(functions, "broker", {"status": "expired,active"})) == ["res-old", "res-new"]


def test_node_gpu_model_and_end_filters(fleet, functions):
    assert _ids(_list(functions, "lab", {"nodeId": "node-c,node-zz"})) == ["res-c1"]
    unknown = _list(functions, "lab", {"nodeId": "node-zz"})
    invisible = _list(functions, "lab", {"nodeId": "node-b"})
    assert (unknown.status, unknown.body_text) == (invisible.status, invisible.body_text)
    assert _ids(unknown) == []
    assert _ids(_list(functions, "operator", {"gpuModelId": "nvidia-a100"})) == ["res-c1"]
    before = {"endsBefore": f.days(10)}
    assert _ids(_list(functions, "operator", before)) == ["res-a2", "res-b1"]
    after = {"endsAfter": f.days(10)}
    assert _ids(_list(functions, "operator", after)) == ["res-c1", "res-a1", "res-a3"]


def test_pages_follow_the_order_and_each_reservation_comes_once(fleet, functions):
    seen, cursor, pages = [], None, 0
    while True:
        query = {"limit": "2", **({"cursor": cursor} if cursor else {})}
        result = _list(functions, "operator", query)
        assert result.status == 200
        assert result.body["items"]  # never an empty page
        seen += _ids(result)
        pages += 1
        cursor = result.body.get("nextCursor")
        if cursor is None:
            break
    assert (seen, pages) == (["res-a2", "res-b1", "res-c1", "res-a1", "res-a3"], 3)


def test_a_cursor_is_bound_to_the_org_and_the_filters(fleet, functions):
    cursor = _list(functions, "operator", {"limit": "1"}).body["nextCursor"]
    for who, query in (
        ("broker", {"cursor": cursor}),
        ("operator", {"cursor": cursor, "status": "cancelled"}),
        ("operator", {"cursor": cursor, "role": "owner"}),
        ("operator", {"cursor": cursor[:-2] + "xx"}),
    ):
        result = _list(functions, who, query)
        assert result.status == 400
        assert result.body["code"] == "invalid_request"
        assert result.body["details"][0]["field"] == "cursor"


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"role": "boss"}, "role"),
        ({"status": "done"}, "status"),
        ({"nodeId": "bad id"}, "nodeId"),
        ({"nodeId": ",".join(f"n{i}" for i in range(51))}, "nodeId"),
        ({"gpuModelId": "/x"}, "gpuModelId"),
        ({"endsBefore": "tomorrow"}, "endsBefore"),
        ({"endsAfter": "2027-01-01T00:00:00"}, "endsAfter"),
        ({"limit": "0"}, "limit"),
        ({"limit": "101"}, "limit"),
    ],
)
def test_bad_filters_are_400_naming_the_parameter(fleet, functions, query, field):
    result = _list(functions, "broker", query)
    assert result.status == 400
    assert result.body["code"] == "invalid_request"
    assert result.body["details"][0]["field"] == field


def test_no_key_is_401_and_a_key_without_read_is_the_404(fleet, functions):
    result = _list(functions, None)
    assert (result.status, result.body["code"]) == (401, "unauthorized")
    assert {k.lower(): v for k, v in result.headers.items()}["www-authenticate"] == "Bearer"
    hidden = _list(functions, "Bearer vl_local_test_noread", {"role": "boss"})
    assert (hidden.status, hidden.body["code"]) == (404, "not_found")


def test_a_cancel_moves_it_to_the_cancelled_list_after_the_stream(fleet, functions):
    writer = "Bearer vl_local_test_writer"
    assert invoke(functions["cancel"], cancel_event("node-a", "res-a1", None, writer)).status == 200
    # fresh before the index catches up: the live entry's reservation is gone from there
    assert _ids(_list(functions, "broker")) == ["res-b1", "res-a3"]
    fleet.run()
    assert _ids(_list(functions, "broker")) == ["res-b1", "res-a3"]
    assert _ids(_list(functions, "broker", {"status": "cancelled"})) == ["res-a4", "res-a1"]


def test_a_node_that_changes_owner_moves_its_reservations_to_the_new_owner(aws, fleet, functions):
    table = boto3.resource("dynamodb").Table("ReservationsTable")
    table.update_item(
        Key={"PK": "NODE#node-b", "SK": "#NODE"},
        UpdateExpression="SET ownerOrgId = :o, version = version + :one",
        ExpressionAttributeValues={":o": "org-lab", ":one": 1},
    )
    # the old owner stops seeing them at the commit (read fresh), before the index moves
    assert _ids(_list(functions, "owner")) == ["res-a2", "res-a1", "res-a3"]
    fleet.run()
    assert _ids(_list(functions, "lab")) == ["res-a2", "res-b1", "res-c1", "res-a1"]
    assert _ids(_list(functions, "lab", {"role": "owner"})) == ["res-b1"]
    old = table.get_item(Key={"PK": "FLEET#org-acme#live", "SK": f"{_end(table, 'res-b1')}"})
    assert "Item" not in old


def test_a_node_whose_units_change_model_is_listed_by_its_new_model(aws, fleet, functions):
    """Entries keep their units' models; a topology change indexes the node again, so the
    list by model follows the node's units as they are now."""
    a100 = {"gpuModelId": "nvidia-a100"}
    assert _ids(_list(functions, "operator", a100)) == ["res-c1"]
    units = [f.unit(UNITS[0], gpuModelId="nvidia-a100", gpuModelName="NVIDIA A100"),
             *(f.unit(u) for u in UNITS[1:])]  # fmt: skip
    body = {"ownerOrgId": "org-acme", "topologyGen": 2, "units": units}
    changed = invoke(
        functions["put_node"], node_event("node-b", body, "Bearer vl_local_test_node_writer")
    )
    assert changed.status == 200, changed.body
    fleet.run()
    listed = _list(functions, "operator", a100)
    assert _ids(listed) == ["res-b1", "res-c1"]
    assert listed.body["items"][0]["status"] == "needs-review"
    entries = [i for i in _index(aws) if i["SK"]["S"].endswith("#node-b#res-b1")]
    assert {tuple(v["S"] for v in i["gpuModelIds"]["L"]) for i in entries} == {("nvidia-a100",)}
    assert _ids(_list(functions, "operator", {"gpuModelId": "nvidia-h100-sxm5-80gb"})) == [
        "res-a2", "res-a1", "res-a3"]  # fmt: skip


def _end(table: Any, res_id: str) -> str:
    item = table.get_item(Key={"PK": "NODE#node-b", "SK": f"RES#{res_id}"})["Item"]
    return f"{item['endsAt']}#node-b#{res_id}"


def test_records_applied_twice_or_late_change_nothing(aws, fleet, functions):
    writer = "Bearer vl_local_test_writer"
    assert invoke(functions["cancel"], cancel_event("node-a", "res-a3", None, writer)).status == 200
    fleet.run()
    before = _index(aws)
    assert any(i["SK"]["S"].endswith("#res-a3") and "ended" in i["PK"]["S"] for i in before)
    assert not any(i["SK"]["S"].endswith("#res-a3") and "live" in i["PK"]["S"] for i in before)
    records = [r for batch in fleet.batches for r in batch["Records"]]
    for replayed in (records, records[::-1]):  # every record again, in order, then backwards
        functions["fleet_indexer"].lambda_handler({"Records": replayed}, FakeContext())
    assert _index(aws) == before


def _index(aws: Any) -> list[dict[str, Any]]:
    items = aws.scan(TableName="ReservationsTable")["Items"]
    return sorted((i for i in items if i["PK"]["S"].startswith("FLEET#")),
                  key=lambda i: (i["PK"]["S"], i["SK"]["S"]))  # fmt: skip


def test_the_shipped_stream_event_is_applied_as_the_table_stands(aws, load_fleet, functions):
    """events/fleet_indexer/cancelled.json (a cancel's two records, for ``sam local
    invoke``) on the demo fleet, where res-a-active was never cancelled: the index follows
    the table, not the records, and lists it as live still."""
    load_fleet(f.demo_fleet())
    FleetStream(aws, functions["fleet_indexer"]).run()
    before = _index(aws)
    answer = functions["fleet_indexer"].lambda_handler(
        event_file("fleet_indexer/cancelled.json"), FakeContext()
    )
    assert answer == {"batchItemFailures": []}
    assert _index(aws) == before
    assert any(i["SK"]["S"].endswith("#node-a1#res-a-active") for i in before)


def test_a_selective_filter_reads_on_past_what_the_index_drops(aws, load_fleet, functions):
    """gpuModelId=b: node-m's b reservation ends first, node-z's last, 16 of model a
    between. The index drops the model a entries, so the first page reads on, in larger
    reads while it finds fewer than it has room for, and lists both, with no cursor."""
    model_a = [f.unit(u, gpuModelId="a") for u in UNITS]
    nodes = [f.node("node-m", [f.unit(UNITS[0], gpuModelId="b")], [_res("res-m", UNITS[0], 1)])]
    nodes += [f.node(n, model_a, [_res(f"res-{n}-{i}", u, 2 + i) for i, u in enumerate(UNITS)])
              for n in ("node-a", "node-b")]  # fmt: skip
    nodes.append(
        f.node("node-z", [f.unit(UNITS[0], gpuModelId="b")], [_res("res-z", UNITS[0], 20)])
    )
    load_fleet(f.fleet(nodes))
    FleetStream(aws, functions["fleet_indexer"]).run()
    first = _list(functions, "broker", {"gpuModelId": "b", "limit": "2"})
    assert _ids(first) == ["res-m", "res-z"]
    assert "nextCursor" not in first.body
    one = _list(functions, "broker", {"gpuModelId": "b", "limit": "1"})
    assert _ids(one) == ["res-m"]
    rest = _list(functions, "broker", {"gpuModelId": "b", "limit": "1",
                                       "cursor": one.body["nextCursor"]})  # fmt: skip
    assert _ids(rest) == ["res-z"]
    assert "nextCursor" not in rest.body
