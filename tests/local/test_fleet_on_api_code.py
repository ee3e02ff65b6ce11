"""The fleet loader writes what the API writes: nodes through the registration code, keys
through the key command's code, reservations and workloads through create's, release's and
placement's rules where the file's state is one those calls could reach."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from devstack import fleet_documents as f
from devstack import fleets
from devstack.api_events import create_event, node_event, place_event, release_event
from devstack.fleets import NODE_QUEUE_PREFIX
from devstack.functions import invoke, load_function
from reservations.kernel.api_keys import KEYID_PREFIX
from reservations.kernel.aws import clients
from reservations_tools import keys
from reservations_tools.fleet import loader
from reservations_tools.fleet.loader import FleetError, local_dead_letter_arn
from reservations_tools.fleet.model import parse_fleet
from tests.support import state
from tests.support.ports import swap_ports

pytestmark = pytest.mark.moto

OPERATOR = {
    "key": "vl_local_test_node_operator",
    "orgId": "org-platform",
    "permissions": ["node.write"],
    "id": "node-operator",
}


def _fleet(*extra_keys: dict[str, Any]) -> dict[str, Any]:
    units = [f.unit("0000:04:00.0"), f.unit("0000:0a:00.0", allocClass="host", sellable=False,
                                            notSellableReason="held for the host")]  # fmt: skip
    return f.fleet([f.node("node-a", units)], [OPERATOR, *extra_keys])


def test_a_loaded_node_is_what_its_registration_writes(aws, load_fleet, monkeypatch):
    monkeypatch.setenv("NODE_QUEUE_PREFIX", NODE_QUEUE_PREFIX)
    monkeypatch.setenv("NODE_DEAD_LETTER_QUEUE_ARN", local_dead_letter_arn(boto3.client("sqs")))
    clients.reset()
    document = _fleet()
    load_fleet(document)
    before = state.whole_table(aws)
    node = document["nodes"][0]
    body = {"ownerOrgId": node["ownerOrgId"], "topologyGen": 1, "units": node["units"]}
    again = invoke(
        load_function("put_node"), node_event("node-a", body, "Bearer vl_local_test_node_operator")
    )
    assert again.status == 200  # the same node: nothing to change, nothing written
    assert state.whole_table(aws) == before
    stored = state.item(aws, "node-a", "#NODE")
    assert again.body["createdAt"] == stored["createdAt"]


def test_loaded_keys_have_unique_ids_like_the_commands_and_load_again(aws, load_fleet):
    load_fleet(_fleet())
    load_fleet(_fleet())  # the same key may keep its id
    markers = [i for i in state.whole_table(aws) if i["PK"].startswith(KEYID_PREFIX)]
    assert f"{KEYID_PREFIX}node-operator" in {m["PK"] for m in markers}
    assert len(markers) == len(f.KEYS) + 1


def test_a_fleet_key_cannot_take_an_id_another_key_has(aws, load_fleet, capsys):
    assert keys.main(["create", "--org", "org-x", "--permission", "reservation.read",
                      "--id", "taken"]) == 0  # fmt: skip
    before = state.whole_table(aws)
    other = {"key": "vl_local_test_other", "orgId": "org-acme", "permissions": [], "id": "taken"}
    with pytest.raises(FleetError, match="API key taken: key id taken is taken by another key"):
        load_fleet(_fleet(other))
    # Found before the first write: neither the file's node nor its other keys were stored.
    assert state.item(aws, "node-a", "#NODE") is None
    assert state.whole_table(aws) == before


# Reservations and workloads: a file whose state the API could reach at load time is made by
# the API's own rules, so it stores what the API calls that reach it would store.
EVERYTHING = {
    "key": "vl_local_test_scheduler",
    "orgId": "org-platform",
    "permissions": ["node.write", "reservation.write", "reservation.capacity", "workload.place"],
    "id": "scheduler",
}
U4, U5, U6, U7 = "0000:04:00.0", "0000:05:00.0", "0000:06:00.0", "0000:07:00.0"


def _reachable_node(now: datetime) -> dict[str, Any]:
    """A node the API could have reached at ``now``: a reservation starting now with a unit
    lent, one pending, and workloads each placement admits."""
    at = f.iso
    units = [f.unit(U4), f.unit(U5), f.unit(U6), f.unit(U7)]
    reservations = [
        f.reservation("res-now", [U4, U5], startsAt=at(now), endsAt=at(now + timedelta(days=30)),
                      releasedUnitIds=[U4], contractRef="C-1", reason="lab term"),
        f.reservation("res-later", [U6], status="pending", startsAt=at(now + timedelta(days=3)),
                      managingOrgIds=[]),
    ]  # fmt: skip
    workloads = [
        f.workload("vm-spot", [U4]),  # spot on a lent unit
        f.workload("pod-lab", [U5], tier="reserved", kind="pod", orgId="org-lab"),
        f.workload("vm-early", [U6]),  # spot before a pending term
        f.workload("vm-walkin", [U7], tier="on-demand", orgId="org-walkin"),
    ]
    return f.node("node-a", units, reservations, workloads)


def _through_the_api(node: dict[str, Any], now: datetime, monkeypatch: pytest.MonkeyPatch) -> None:
    """Register, create, release and place with the functions, their clocks at ``now``."""

    def at_now(name: str, **ports: Any) -> Any:
        module = load_function(name)
        swap_ports(monkeypatch, module, clock=lambda: now, **ports)
        return module

    auth = "Bearer " + EVERYTHING["key"]
    body = {"ownerOrgId": node["ownerOrgId"], "topologyGen": 1, "units": node["units"]}
    assert invoke(at_now("put_node"), node_event("node-a", body, auth)).status == 201
    for stated in node["reservations"]:
        create = at_now("create_reservation", new_id=lambda r=stated: r["id"])
        fields = ("startsAt", "endsAt", "allowedOrgIds", "managingOrgIds", "contractRef", "reason")
        body = {"unitIds": stated["reservedUnitIds"]} | {
            k: stated[k] for k in fields if k in stated
        }
        assert invoke(create, create_event("node-a", body, auth)).status == 201
        if stated["releasedUnitIds"]:
            lend = {"unitIds": stated["releasedUnitIds"]}
            answer = invoke(at_now("release"), release_event("node-a", stated["id"], lend, auth))
            assert answer.status == 200
    for stated in node["workloads"]:
        body = {k: stated[k] for k in ("id", "kind", "tier", "orgId", "unitIds")}
        assert invoke(at_now("place_workload"), place_event("node-a", body, auth)).status == 201


def _partition(dynamodb: Any) -> list[dict[str, Any]]:
    """The node's items as they read, but for ``version`` and the node's ``placements``:
    the API writes each item once per call, the loader once; both count writes."""
    return [
        {name: value for name, value in item.items() if name not in ("version", "placements")}
        for item in state.whole_table(dynamodb)
        if item["PK"] == "NODE#node-a"
    ]


def test_a_state_the_api_could_reach_loads_as_the_api_calls_store_it(aws, monkeypatch):
    monkeypatch.setenv("NODE_QUEUE_PREFIX", NODE_QUEUE_PREFIX)
    monkeypatch.setenv("NODE_DEAD_LETTER_QUEUE_ARN", local_dead_letter_arn(boto3.client("sqs")))
    clients.reset()
    now = datetime.now(UTC).replace(microsecond=0)
    node = _reachable_node(now)
    fleets.load_fleet(f.fleet([], [EVERYTHING]), aws, boto3.client("sqs"), now)
    _through_the_api(node, now, monkeypatch)
    by_the_api = _partition(aws)

    document = f.fleet([node], [EVERYTHING])
    fleets.load_fleet(document, aws, boto3.client("sqs"), now)
    assert _partition(aws) == by_the_api
    made = loader.routes(parse_fleet(json.dumps(document)), now)
    assert [(r.id, r.rules) for r in made] == [
        ("res-now", "create, release"), ("res-later", "create"), ("vm-spot", "place"),
        ("pod-lab", "place"), ("vm-early", "place"), ("vm-walkin", "place"),
    ]  # fmt: skip
