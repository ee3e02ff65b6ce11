"""Loading a fleet into DynamoDB (moto): whole or not at all, versions only forward, keys that
leave the file stop working."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from devstack import fleet_documents as f
from devstack.api_events import list_units_event, reclaim_event
from devstack.functions import invoke, load_function
from reservations.kernel.auth import hash_key
from reservations.nodes.table.keys import node_pk
from reservations_tools import keys
from reservations_tools.fleet import loader
from reservations_tools.fleet.loader import FleetError, main, write_fleet
from reservations_tools.fleet.model import parse_fleet
from tests.support import state

pytestmark = pytest.mark.moto

TABLE = "ReservationsTable"
BROKER = "Bearer vl_local_test_broker"
UNITS = ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0"]


def one_node(extra_keys: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return f.fleet(
        [
            f.node(
                "node-a",
                [f.unit(u) for u in UNITS],
                [f.reservation("res-1", UNITS, releasedUnitIds=UNITS[:2])],
                [f.workload("vm-1", [UNITS[0]]), f.workload("vm-2", [UNITS[1]])],
            )
        ],
        extra_keys,
    )


def load(dynamodb: Any, document: dict[str, Any], **options: Any) -> int:
    fleet = parse_fleet(json.dumps(document))
    return write_fleet(fleet, dynamodb, TABLE, datetime.now(UTC), **options)


def versions(dynamodb: Any, node_id: str = "node-a") -> dict[str, int]:
    response = dynamodb.query(
        TableName=TABLE,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": node_pk(node_id)}},
        ConsistentRead=True,
    )
    return {i["SK"]["S"]: int(i["version"]["N"]) for i in response["Items"]}


@pytest.fixture(scope="module")
def functions() -> dict[str, Any]:
    return {name: load_function(name) for name in ("list_units", "reclaim")}


def test_a_first_load_writes_every_item_at_version_1(aws):
    load(aws, one_node())
    assert versions(aws) == {
        "#NODE": 1,
        "~ACCESS": 1,
        "RES#res-1": 1,
        **{f"UNIT#{u}": 1 for u in UNITS},
        "WL#vm-1": 1,
        "WL#vm-2": 1,
    }


def test_reloading_after_a_reclaim_moves_every_version_forward(aws, load_fleet, functions):
    document = one_node()
    load_fleet(document)
    body = {"unitIds": UNITS[:2], "reason": "back to the lab"}
    reclaimed = invoke(functions["reclaim"], reclaim_event("node-a", "res-1", body, BROKER))
    assert reclaimed.status == 200
    before = versions(aws)
    assert before["RES#res-1"] > 1  # the reclaim wrote at a later version
    load_fleet(document)
    after = versions(aws)
    assert after.keys() == before.keys()
    assert all(after[sk] > before[sk] for sk in before), (before, after)
    # The file's state is back: a reclaim that read before the reload would now fail its
    # version conditions instead of overwriting it.
    assert state.workload(aws, "node-a", "vm-1")["state"] == "running"


def test_a_reloaded_node_keeps_when_it_was_first_registered_as_a_put_does(aws):
    first = datetime(2026, 11, 1, 9, 30, tzinfo=UTC)
    loader.write_fleet(parse_fleet(json.dumps(one_node())), aws, TABLE, first)
    later = first + timedelta(days=3)
    loader.write_fleet(parse_fleet(json.dumps(one_node())), aws, TABLE, later)
    node = state.item(aws, "node-a", "#NODE")
    assert (node["createdAt"], node["updatedAt"]) == ("2026-11-01T09:30:00Z", f.iso(later))


def test_items_the_file_no_longer_has_are_deleted_and_new_ones_start_at_1(aws):
    document = one_node()
    load(aws, document)
    document["nodes"][0]["workloads"] = [f.workload("vm-3", [UNITS[2]])]
    load(aws, document)
    found = versions(aws)
    assert "WL#vm-1" not in found
    assert "WL#vm-2" not in found
    assert found["WL#vm-3"] == 1
    assert found["RES#res-1"] == 2


def test_a_write_between_the_loaders_read_and_its_write_is_not_overwritten_blindly(
    aws, monkeypatch
):
    load(aws, one_node())
    read = loader._stored_versions
    reads = []

    def read_then_someone_writes(*args: Any) -> tuple[dict[str, int | None], str | None]:
        stored = read(*args)
        reads.append(stored)
        if len(reads) == 1:  # a reclaim commits right after the loader's first read
            aws.update_item(
                TableName=TABLE,
                Key={"PK": {"S": "NODE#node-a"}, "SK": {"S": "RES#res-1"}},
                UpdateExpression="SET version = version + :one",
                ExpressionAttributeValues={":one": {"N": "1"}},
            )
        return stored

    monkeypatch.setattr(loader, "_stored_versions", read_then_someone_writes)
    load(aws, one_node())
    assert len(reads) == 2  # the first attempt failed its condition; the second read again
    assert versions(aws)["RES#res-1"] == 3  # loaded 1, the other writer's 2, reloaded 3


def test_a_node_that_keeps_changing_is_reported(aws, monkeypatch):
    load(aws, one_node())
    read = loader._stored_versions

    def always_stale(*args: Any) -> tuple[dict[str, int | None], str | None]:
        stored, created_at = read(*args)
        return {sk: (v or 0) - 1 for sk, v in stored.items()}, created_at

    monkeypatch.setattr(loader, "_stored_versions", always_stale)
    with pytest.raises(FleetError, match="node node-a kept changing while it was loaded"):
        load(aws, one_node())


def test_a_node_of_more_than_100_items_loads_whole_in_several_transactions(aws):
    units = [f"0000:{i:02x}:00.0" for i in range(64)]
    reservations = [f.reservation(f"res-{n:02}", [u]) for n, u in enumerate(units)]
    document = f.fleet([f.node("node-big", [f.unit(u) for u in units], reservations)])
    calls: list[int] = []

    def node_transaction(params: dict, **_: object) -> None:
        # Keys go one transaction each (the key and its id marker); count the node's.
        if "Item" in params["TransactItems"][0].get("Put", {}):
            pk = params["TransactItems"][0]["Put"]["Item"]["PK"]["S"]
            if not pk.startswith("NODE#"):
                return
        calls.append(len(params["TransactItems"]))

    aws.meta.events.register("provide-client-params.dynamodb.TransactWriteItems", node_transaction)
    load(aws, document)
    assert calls == [100, 30]  # the node, its list access, 64 units, 64 reservations
    load(aws, document)
    assert set(versions(aws, "node-big").values()) == {2}


def test_an_item_over_the_size_limit_writes_nothing(aws, monkeypatch):
    load(aws, one_node())
    before = state.whole_table(aws)
    document = one_node()
    document["nodes"][0]["reservations"][0]["reason"] = "r" * 1000
    monkeypatch.setattr(loader, "MAX_ITEM_BYTES", 1000)  # the reservation's reason tips it over
    with pytest.raises(FleetError, match="node node-a, item RES#res-1"):
        load(aws, document)
    assert state.whole_table(aws) == before


GONE = {"key": "vl_local_test_gone", "orgId": "org-acme", "permissions": f.BOTH}


def list_with(functions: dict[str, Any], key: str) -> int:
    from reservations.kernel.http.resolver import key_cache

    key_cache.clear()  # the 60 s cache is the documented bound; the test looks past it
    return invoke(functions["list_units"], list_units_event("node-a", f"Bearer {key}")).status


def test_a_key_missing_from_a_reloaded_file_is_revoked_not_deleted(aws, functions):
    load(aws, one_node([GONE]))
    assert list_with(functions, "vl_local_test_gone") == 200
    load(aws, one_node())
    assert list_with(functions, "vl_local_test_gone") == 401
    assert list_with(functions, "vl_local_test_owner") == 200
    [gone] = [i for i in state.whole_table(aws) if i.get("keyId", "").startswith("key-")
              and i["orgId"] == "org-acme" and i["revoked"]]  # fmt: skip
    assert gone["permissions"] == sorted(f.BOTH)  # kept for audit, only revoked
    load(aws, one_node([GONE]))  # back in the file: it works again
    assert list_with(functions, "vl_local_test_gone") == 200


def test_only_add_leaves_keys_the_file_does_not_list(aws, functions):
    load(aws, one_node([GONE]))
    load(aws, one_node(), only_add=True)
    assert list_with(functions, "vl_local_test_gone") == 200


def test_the_command_revokes_unless_told_it_only_adds(aws, functions, tmp_path, capsys):
    with_gone, without = tmp_path / "with.json", tmp_path / "without.json"
    with_gone.write_text(json.dumps(one_node([GONE])))
    without.write_text(json.dumps(one_node()))
    assert main(["load", str(with_gone), "--no-queues"]) == 0
    assert main(["load", str(without), "--no-queues", "--only-add"]) == 0
    assert list_with(functions, "vl_local_test_gone") == 200
    assert main(["load", str(without), "--no-queues"]) == 0
    assert list_with(functions, "vl_local_test_gone") == 401
    assert "vl_local_test_gone" not in capsys.readouterr().out


def _operator(aws: Any, key: str) -> bool:
    stored = state.whole_table(aws)
    return next(i for i in stored if i["PK"] == f"APIKEY#{hash_key(key)}")["platformOperator"]


def test_the_loader_records_the_platforms_org_and_its_keys_alone_are_operators(aws, capsys):
    load(aws, one_node())
    assert keys.platform_org(aws, TABLE) == "org-platform"
    assert (_operator(aws, "vl_local_test_operator"), _operator(aws, "vl_local_test_owner")) == (
        True,
        False,
    )
    assert keys.main(["platform"]) == 0
    assert capsys.readouterr().out == "org-platform\n"


def test_a_file_of_another_platform_org_loads_whole_and_its_keys_follow(aws):
    load(aws, one_node())
    document = one_node()
    document["platformOrgId"] = "org-acme"
    with pytest.raises(FleetError, match="platformOrgId: the table's platform org is org-platform"):
        load(aws, document, only_add=True)  # the old platform's keys would stay operators
    assert _operator(aws, "vl_local_test_operator") is True
    load(aws, document)
    assert keys.platform_org(aws, TABLE) == "org-acme"
    assert (_operator(aws, "vl_local_test_operator"), _operator(aws, "vl_local_test_owner")) == (
        False,
        True,
    )


def test_a_fleet_made_termination_is_stored_with_its_reservation(aws, load_fleet):
    document = one_node()
    document["nodes"][0]["workloads"][0]["state"] = "terminating"
    load_fleet(document)
    workload = state.workload(aws, "node-a", "vm-1")
    assert workload["terminationReservationId"] == "res-1"
    assert workload["terminationId"].startswith("term-fleet-")
    assert len(workload["terminationId"]) == len("term-fleet-") + 32


# A key id another stored key has is found before the first write: nothing of the file is
# written, not even the nodes, which used to be written before the keys were put.
SHARED = {
    "key": "vl_local_test_first",
    "orgId": "org-acme",
    "permissions": f.BOTH,
    "id": "shared-id",
}
THIEF = {
    "key": "vl_local_test_second",
    "orgId": "org-lab",
    "permissions": f.BOTH,
    "id": "shared-id",
}
TAKEN = "API key shared-id: key id shared-id is taken by another key"


def with_node_b(document: dict[str, Any]) -> dict[str, Any]:
    document["nodes"].append(f.node("node-b", [f.unit(UNITS[0])]))
    return document


def test_a_key_id_another_stored_key_has_writes_nothing(aws):
    load(aws, one_node([SHARED]))
    before = state.whole_table(aws)
    with pytest.raises(FleetError, match=TAKEN):
        load(aws, with_node_b(one_node([THIEF])))
    assert versions(aws, "node-b") == {}
    assert state.whole_table(aws) == before  # node-a not rewritten, no key put or revoked


def test_key_ids_are_read_in_batches_of_100(aws):
    load(aws, one_node([SHARED]))
    many = [{"key": f"vl_local_test_many_{i}", "orgId": "org-acme", "permissions": [],
             "id": f"many-{i}"} for i in range(150)]  # fmt: skip
    batches: list[int] = []

    def count(params: dict[str, Any], **_: object) -> None:
        batches.append(len(params["RequestItems"][TABLE]["Keys"]))

    aws.meta.events.register("provide-client-params.dynamodb.BatchGetItem", count)
    with pytest.raises(FleetError, match=TAKEN):  # the clash is the 156th key: second batch
        load(aws, with_node_b(one_node([*many, THIEF])))
    assert batches == [100, 56]
    assert versions(aws, "node-b") == {}


class Throttled:
    """The DynamoDB client, but its first ``times`` BatchGetItems leave every key unprocessed,
    as DynamoDB does when it throttles a batch."""

    def __init__(self, client: Any, times: int) -> None:
        self.client, self.times, self.calls = client, times, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    def batch_get_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:  # boto3 spells it so
        self.calls += 1
        if self.calls <= self.times:
            return {"Responses": {}, "UnprocessedKeys": RequestItems}
        return dict(self.client.batch_get_item(RequestItems=RequestItems))


def test_key_ids_left_unprocessed_are_asked_again_after_growing_pauses(aws, monkeypatch):
    pauses: list[float] = []
    monkeypatch.setattr(loader.time, "sleep", pauses.append)
    load(aws, one_node([SHARED]))
    throttled = Throttled(aws, times=loader.READ_ATTEMPTS - 1)
    fleet = parse_fleet(json.dumps(with_node_b(one_node([THIEF]))))
    with pytest.raises(FleetError, match=TAKEN):
        write_fleet(fleet, throttled, TABLE, datetime.now(UTC))
    assert throttled.calls == loader.READ_ATTEMPTS
    assert pauses == [0.05, 0.1, 0.2, 0.4]
    assert versions(aws, "node-b") == {}


def test_key_ids_that_cannot_be_read_are_reported_and_nothing_is_written(aws, monkeypatch):
    monkeypatch.setattr(loader.time, "sleep", lambda _: None)
    throttled = Throttled(aws, times=loader.READ_ATTEMPTS)
    fleet = parse_fleet(json.dumps(one_node()))
    with pytest.raises(FleetError, match="kept throttling the read of the key ids"):
        write_fleet(fleet, throttled, TABLE, datetime.now(UTC))
    assert state.whole_table(aws) == []


def test_a_key_made_after_the_check_is_still_refused_when_put(aws, monkeypatch):
    # The check reads; a key command commits the id before the loader puts its keys.
    read = loader._key_id_owners

    def read_then_someone_takes_the_id(*args: Any) -> dict[str, str]:
        owners = read(*args)
        assert keys.main(["create", "--org", "org-x", "--permission", "reservation.read",
                          "--id", "shared-id"]) == 0  # fmt: skip
        return owners

    monkeypatch.setattr(loader, "_key_id_owners", read_then_someone_takes_the_id)
    with pytest.raises(FleetError, match=TAKEN):
        load(aws, one_node([THIEF]))
    [marker] = [i for i in state.whole_table(aws) if i["PK"] == "KEYID#shared-id"]
    assert marker["keyHash"] != hash_key(THIEF["key"])  # the other key keeps its id


def test_the_command_makes_no_queue_for_a_file_it_refuses(aws, tmp_path, capsys):
    load(aws, one_node([SHARED]))
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps(with_node_b(one_node([THIEF]))))
    assert main(["load", str(path)]) == 1
    assert TAKEN in capsys.readouterr().err
    queues = boto3.client("sqs").list_queues(QueueNamePrefix="reservations-node-node-b")
    assert queues.get("QueueUrls", []) == []
    assert versions(aws, "node-b") == {}
